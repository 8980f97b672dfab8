"""The ``fleet:`` section of nerve.yaml (validated with the rest of the file)::

    fleet:
      warehouse: file:///srv/nerve-fleet        # or s3://bucket/prefix
      catalog: sqlite:////srv/nerve-fleet/catalog.db  # any SQLAlchemy URI, or an Iceberg
                                                # REST catalog's http(s):// URL
      rest_signing: s3tables                    # REST: SigV4-sign requests with the S3 keys,
                                                # as this service (s3tables, glue)
      table: nerve.events                       # namespace.table
      host: laptop                              # default: this machine's name
      ship: manual                              # or auto: the daemon ships after each seal
      ship_interval: 3600                       # auto: at most one ship an hour, at a
                                                # moment of the hour fixed per host (0: after
                                                # each seal)
      maintain_interval: 900                    # the daemon runs `fleet maintain` this often
                                                # (0: never), at a moment fixed per host; on
                                                # one host or several (maintains are safe at once)
      maintain_keep: 3600                       # the snapshots it keeps: those younger than this
      endpoint: http://127.0.0.1:8333           # S3-compatible server (s3:// warehouses only)
      region: us-east-1
      credentials_file: ~/.config/nerve/s3.ini  # AWS-style [profile] file; else the environment
      cache_mb: 2048                            # files a query fetched, kept (content-named)
      files: s3://bucket/nerve                  # host folders elsewhere than the table's
                                                # location (a REST table bucket holds only
                                                # Iceberg's files)

Secrets never live here: S3 keys come from ``AWS_ACCESS_KEY_ID`` / ``AWS_SECRET_ACCESS_KEY``
or ``credentials_file``; a catalog password from ``NERVE_FLEET_CATALOG`` (the whole URI).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal, Protocol
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic_core import PydanticCustomError

from nerve.errors import UsageError

__all__ = ["HOST_PATTERN", "SECRET_KEYS", "FleetConfig", "fleet_config"]

HOST_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$")
_TABLE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\.[A-Za-z_][A-Za-z0-9_]*$")
SECRET_KEYS = frozenset(
    {"access_key", "access_key_id", "aws_access_key_id", "secret_key", "secret_access_key"}
    | {"aws_secret_access_key", "session_token", "password", "token"}
)


def _fail(code: str, message: str, **ctx: Any) -> PydanticCustomError:
    return PydanticCustomError(code, message, ctx)


class FleetConfig(BaseModel):
    """A whole ``fleet:`` section."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    warehouse: str
    catalog: str | None = None
    table: str = "nerve.events"
    host: str | None = None
    ship: Literal["manual", "auto"] = "manual"
    ship_interval: int = Field(default=0, ge=0, le=7 * 86400)  # seconds; 0: after each seal
    maintain_interval: int = Field(default=0, ge=0, le=7 * 86400)  # seconds; 0: never
    maintain_keep: int = Field(default=3600, ge=0)  # seconds of snapshots a scheduled one keeps
    endpoint: str | None = None
    region: str = "us-east-1"
    credentials_file: str | None = None
    rest_signing: str | None = None  # SigV4 service name for a REST catalog (s3tables, glue)
    profile: str = "default"
    cache_mb: int = Field(default=2048, ge=0)  # fetched files kept for queries (0: none)
    files: str | None = None  # where host folders go; default: the table's location

    @model_validator(mode="before")
    @classmethod
    def _no_secrets(cls, data: Any) -> Any:
        if isinstance(data, dict):
            for key in data:
                if str(key).lower() in SECRET_KEYS:
                    raise _fail(
                        "nerve_fleet_secret",
                        "credentials never go in nerve.yaml: set AWS_ACCESS_KEY_ID and "
                        "AWS_SECRET_ACCESS_KEY, or name a file with 'credentials_file'",
                        at_key=key,
                    )
        return data

    @field_validator("warehouse", "files")
    @classmethod
    def _warehouse(cls, value: str | None) -> str | None:
        if value is None:
            return None
        scheme = urlsplit(value).scheme
        if scheme not in ("file", "s3"):
            raise _fail(
                "nerve_fleet_uri", "must be a file:// or s3:// URI (got {value})", value=repr(value)
            )
        if scheme == "s3" and not urlsplit(value).netloc:
            raise _fail("nerve_fleet_uri", "an s3:// warehouse needs a bucket: s3://bucket/prefix")
        return value.rstrip("/")

    @field_validator("catalog")
    @classmethod
    def _catalog(cls, value: str | None) -> str | None:
        if value is not None and urlsplit(value).password:
            raise _fail(
                "nerve_fleet_secret",
                "the catalog URI holds a password: set the whole URI in NERVE_FLEET_CATALOG"
                " instead",
            )
        return value

    @field_validator("table")
    @classmethod
    def _table(cls, value: str) -> str:
        if not _TABLE.match(value):
            message = "must be namespace.table (got {value})"
            raise _fail("nerve_fleet_table", message, value=repr(value))
        return value

    @field_validator("host")
    @classmethod
    def _host(cls, value: str | None) -> str | None:
        if value is not None and not HOST_PATTERN.match(value):
            raise _fail(
                "nerve_fleet_host",
                "host {value}: letters, digits, '.', '-' or '_', at most 63, not starting "
                "with a dot or dash",
                value=repr(value),
            )
        return value


MODELS = (FleetConfig,)


class _Configured(Protocol):
    """A workspace folder, as far as its ``fleet:`` section goes (its config names this module)."""

    @property
    def config(self) -> Any: ...

    @property
    def config_path(self) -> Path: ...


def fleet_config(ws: _Configured) -> FleetConfig:
    """The ``fleet:`` section of the workspace's nerve.yaml (``UsageError`` without one)."""
    cfg = ws.config.fleet
    if not isinstance(cfg, FleetConfig):
        raise UsageError(
            f"{ws.config_path}: no fleet section",
            hint="add one with `nerve fleet init --warehouse URI`",
        )
    return cfg
