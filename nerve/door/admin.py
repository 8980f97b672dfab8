"""Running and looking after a workspace through the front door: the daemon in the
foreground and its log lines, checking nerve.yaml, the privacy rules on a sample, the
surfacing chain's bundle, and re-wrapping the data key (``nerve run``, ``nerve logs``,
``nerve validate``, ``nerve privacy test``, ``nerve audit``, ``nerve key rotate``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from nerve.attention.audit import Verdict
    from nerve.categories import CategoryRule
    from nerve.privacy.policy import Verdict as TextVerdict
    from nerve.runtime.daemon import View
    from nerve.seal import SealReport, Seed
    from nerve.seal.token import TokenRef
    from nerve.seal.witness import Cosigned
    from nerve.workspace import WorkspaceDir

__all__ = ["AdminOps"]


class AdminOps:
    """What runs and looks after the workspace: mixed into :class:`nerve.door.core.Core`."""

    _dir: WorkspaceDir
    read_only: bool

    if TYPE_CHECKING:

        def _writable(self) -> WorkspaceDir: ...

    def _run_daemon(self, *, view: View | None = None, echo: TextIO | None = None) -> None:
        """Run the daemon in this process until it is stopped: drawing ``view``, or
        writing its log lines to ``echo``."""
        from nerve.runtime import daemon

        daemon.run_foreground(self._writable(), view=view, echo=echo)

    def _daemon_lines(self, lines: list[str]) -> list[str]:
        """Lines of the daemon's log as a person reads them (sealed ones opened with the
        key when it is given)."""
        from nerve.runtime import daemon

        return daemon.open_lines(self._dir, lines)

    def _validate(self) -> tuple[list[str], list[str]]:
        """nerve.yaml checked as the daemon would load it, then every sense and workflow
        it names: the problems (none when valid) and hints."""
        from nerve.config import config_hints, validate_config
        from nerve.flow.validate import check_workflows
        from nerve.runtime.senses import check_layout

        ws = self._dir
        issues = [str(i) for i in validate_config(ws.config_path)]
        if not issues:
            issues = check_layout(ws, ws.config) + check_workflows(ws, ws.config)
        return issues, [str(h) for h in config_hints(ws.config_path)]

    def _set_categories(self, rules: Sequence[Mapping[str, str]]) -> list[CategoryRule]:
        """Replace nerve.yaml's ``categories:`` with the rules (``name``, ``app``, ``title``
        each), once the whole file they make validates, and record it as a
        ``categories.set`` event; the rules as stored."""
        from pydantic import ValidationError

        from nerve import fsio
        from nerve.categories import CategoryRule, with_rules
        from nerve.config import parse_config
        from nerve.errors import ConfigError
        from nerve.events import NERVE_SOURCE, Trust
        from nerve.log.drafts import Draft
        from nerve.logops import emit

        ws = self._writable()
        path = ws.config_path
        old = path.read_text(encoding="utf-8") if path.exists() else ""
        parsed = []
        for at, rule in enumerate(rules):
            try:
                parsed.append(CategoryRule(**dict(rule)))
            except ValidationError as exc:
                error = exc.errors()[0]
                where = ".".join(str(p) for p in error["loc"])
                why = f"categories[{at}].{where}: {error['msg']}"
                raise ConfigError(f"{path}: {why}", field="categories") from None
        text = with_rules(old, parsed)
        kept = parse_config(text, str(path)).categories
        fsio.write_private(path, text.encode("utf-8"), site="config", exclusive=False)
        payload = {"rules": [r.model_dump() for r in kept]}
        line = f"categories set: {len(kept)} rule{'' if len(kept) == 1 else 's'}"
        emit(ws, [Draft.of("categories.set", source=NERVE_SOURCE, trust=Trust.FIRST_PARTY,
                           line=line, payload=payload, subject="categories")])  # fmt: skip
        return kept

    def _privacy_test(self, text: str, *, source: str, kind: str, sense: str = "") -> TextVerdict:
        """What the privacy rules would store for ``text`` as such an event, and why."""
        from nerve.privacy.ops import test_text

        return test_text(self._dir, text, source=source, kind=kind, sense=sense)

    def _audit_check(self, *, key: bytes | None, key_from: str, record: bool) -> Verdict:
        """The surfacing chain verified against ``key`` (said to come from ``key_from``),
        else the pinned one; an empty chain is fine (none was ever written)."""
        from nerve.attention import audit

        return audit.verify(
            audit.chain_links(self._dir.log_root),
            origin=f"workspace:{self._dir.root}",
            key=key,
            key_from=key_from,
            record=record and not self.read_only,
            empty_ok=True,
        )

    def _audit_export(self, out: Path) -> dict[str, Any]:
        """Write the surfacing chain as a bundle that verifies offline elsewhere."""
        from nerve.attention import bundle

        return bundle.export(self._dir.log_root, out)

    def _seal_setup(self, epoch_s: int, *, bits: int = 16, token: TokenRef | None = None) -> Seed:
        """Set epoch sealing up (once): the verification seed to keep off this machine; a
        token's identity key, if given, certifies it."""
        from nerve.seal import setup
        from nerve.seal.token import certifier

        folder = self._writable().data / "seals"
        return setup(
            folder, epoch_s, bits=bits, certify=None if token is None else certifier(token)
        )

    def _seal_verify(self, seed: Seed, *, now_ns: int | None = None) -> SealReport:
        """Every epoch seal checked against ``seed`` and the log as it is now."""
        import time

        from nerve.seal import SealDir, read_log, verify

        now = time.time_ns() if now_ns is None else now_ns
        seals = SealDir(self._dir.data / "seals")
        return verify(seed, seals.notes(), read_log(self._dir.log_root), now)

    def _seal_witness(self, other: Path, seed: Seed) -> Cosigned:
        """Cosign the newest seal of the workspace at ``other`` (this workspace witnesses
        it): its seals verified with ``seed``, and no other history than the one cosigned
        before."""
        from nerve.seal import SealDir, read_log
        from nerve.seal.witness import cosign
        from nerve.workspace import WorkspaceDir

        theirs = WorkspaceDir(Path(other).resolve())
        notes = SealDir(theirs.data / "seals").notes()
        folder = self._writable().data / "witness"
        return cosign(folder, seed, notes, read_log(theirs.log_root))

    def _rewrap_key(self, new_key: Callable[[Path], tuple[bytes, dict[str, Any]]]) -> Path:
        """Wrap the data key under the key ``new_key`` makes (given the log's folder); the
        current one comes from the environment. No segment is rewritten. The keyring."""
        from nerve.errors import UsageError
        from nerve.log import crypt

        log_root = self._writable().log_root
        if not crypt.is_encrypted(log_root):
            raise UsageError(
                f"{self._dir.root} is not encrypted", hint="nerve init --encrypt makes one"
            )
        old = crypt.kek_from_env(log_root, crypt.read_keyring(log_root))
        new, source = new_key(log_root)
        crypt.rewrap(log_root, old, new, source)
        return crypt.keyring_path(log_root)
