"""A question in parts: :func:`parse` turns it into a :class:`Plan` — the window it asks
about (:mod:`nerve.recall.plans.window`), the subject and the measure — or None when it names
nothing this planner reads (the older intents and the fallback then try).

**Subjects** (``Subject.kind``): ``anything`` (what happened), ``activity`` (what was I
doing), ``command`` (a shell command, or its words), ``process`` (by name, command line words
or ``pid N``), ``window`` (an app or a window title), ``away`` (time away from the machine,
no input), ``folder`` (where commands ran and files changed), ``reading`` (a sense reading:
``load``, ``cpu``, ``memory``, ``disk``, ``network``), ``attention`` (nerve's own decisions),
``file`` (files changed, by name or folder; ``status`` ``added`` or ``deleted``),
``running`` (what was running at a time, or is still running), ``daemon`` (nerve's own
daemon: when it started and stopped, its senses).

**Measures**: ``list``, ``count``, ``duration`` (time spent), ``first``, ``last``, ``when``,
``peak``, ``average``, ``most`` (which one had the most), ``exit`` (exit status),
``running`` (still running? finished?), ``before`` / ``after`` (order, against
``Plan.anchor``), ``why`` and ``unusual`` (attention).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from datetime import tzinfo

from nerve.recall.plans.window import Window, find_window
from nerve.recall.plans.words import Known, app_hit

__all__ = ["Plan", "Subject", "parse", "window_of"]

_READINGS = (
    ("load", r"\bload(?: average)?s?\b"),
    ("disk", r"\b(?:free disk|disk space|disk|free space|storage)\b"),
    ("network", r"\b(?:network|bandwidth|download(?:ed|ing)?|upload(?:ed|ing)?|traffic)\b"),
    ("memory", r"\b(?:memory|ram|rss)\b"),
    ("cpu", r"\b(?:cpu|processor|busy|loaded)\b"),
)
_READING_WORDS = frozenset(["memory", "ram", "cpu", "load", "disk", "network", "processor"])
_ATTENTION = re.compile(
    r"\b(surfaced?|surfacing|held|withheld|hold|interrupt\w*|notif\w*|alert\w*|unusual|"
    r"anomal\w*|highlights?|abnormal|strange|weird|odd|out of the ordinary|you show\w*|"
    r"showed me|shown to me|attention|decisions?|"
    r"nerve (?:\w+ )?(?:tell|told|say|said|flag\w*|notic\w*|warn\w*|spot\w*|mention\w*|catch|"
    r"caught))\b"
)
_DAEMON = re.compile(
    r"\b(daemon|senses?)\b|\bnerve\b.*\b(start\w*|stop\w*|begin|began|record\w*|run\w*|ran|"
    r"watch\w*|up|alive|quit|exit\w*|restart\w*|crash\w*|load\w*)\b"
)
_UNUSUAL = re.compile(
    r"\b(unusual|anomal\w*|abnormal|strange|weird|odd|out of the ordinary|wrong)\b"
)
_ATTENTION_WORDS = re.compile(
    r"\b(nerve|me|about|you|attention|decisions?|made|back|flag\w*|notic\w*|tell|told|say|said|"
    r"warn\w*|spot\w*|mention\w*|catch|caught|highlights?|raised|"
    r"failing|show\w*|get|got|and|why)\b"
)
_COMMAND = re.compile(
    r"\b(run|ran|runs|command|commands|type|typed|executed|exit (?:code|status)|return code|"
    r"shell)\b"
)
_PROCESS = re.compile(r"\b(process|processes|program|programs|pid)\b")
_WINDOW = re.compile(
    r"\b(windows?|apps?|applications?|focus(?:ed)?|switch(?:ed)? to|in front|titled?|"
    r"on (?:my |the )?screen)\b"
)
_AWAY = re.compile(
    r"\b(away|afk|idle|no input|inactive|(?:come|came|got|get) back|back (?:at|to) (?:the|my) "
    r"(?:computer|desk|keyboard|machine|screen)|(?:on|took|take|taking) a break|breaks?|"
    r"(?:was|were|am) i (?:at|near|by|in front of) (?:the|my) (?:computer|desk|keyboard|machine|"
    r"screen)|(?:was|were|am) i (?:around|active|present|here|there))\b"
)
_FOLDER = re.compile(
    r"\b(folders?|director(?:y|ies)|dirs?|cd|cd'?ed|cwd|paths? i worked|"
    r"where (?:did|was|were) (?:i )?(?:\w+ )?(?:run|ran|work|start|started|launch|launched))\b"
)
_FOLDER_WORDS = frozenset(
    ["folder", "folders", "directory", "directories", "dir", "dirs", "cd", "cded", "cd'd",
     "cwd", "work", "worked", "where", "spend", "spent", "in", "into", "inside", "working",
     "from", "started", "start"]
)  # fmt: skip
_DOING = re.compile(r"\b(doing|working on|up to|busy with|what did i do)\b")
_HAPPENED = re.compile(r"\b(happened|happening|went on|going on|events?|recorded|logged)\b")
_FAILED = re.compile(
    r"\b(fail\w*|(?:did not|didn't|did n't|not) (?:succeed|work|pass)\w*|unsuccessful|"
    r"errored|broke|broken|non-?zero)\b"
)
_OK = re.compile(r"\b(succeed\w*|success\w*|work(?:ed|s)?|pass(?:ed|es)?)\b")
_FILE = re.compile(
    r"\b(files?|edit(?:s|ed|ing)?|modif\w*|chang(?:e|ed|es)|creat\w*|added|saved|wrote|"
    r"written|touched|deleted|removed)\b"
)
_FILE_ADDED = re.compile(r"\b(creat\w*|added|new)\b")
_FILE_DELETED = re.compile(r"\b(deleted|removed)\b")
_USE = re.compile(r"\b(?:(cores?|share of|cpu|processor)|(big|large|size|memory|ram|rss))\b")
_RUNNING = re.compile(
    r"\b(?:(?:was|were|is|are|still) (?:\w+ )?(?:running|going|alive|up)|running (?:then|now))\b"
)
_LOOKING = re.compile(
    r"\b(?:switch(?:ing|ed)? to|going to|moving to|reading|looking at|browsing|watching|"
    r"editing|using|right|just)\b"
)
_PID = re.compile(r"\b(?:pid|process(?: id)?)\s*(?:was\s+|number\s+)?(\d{2,})\b|\[(\d+)\]")
_DEFER = re.compile(
    r"\b(slowest|longest|slow|per app|each app|new|ports?|listening|files?|"
    r"changed|edited|modified|budget|errors?|in [~/.]\S*)"
)
"""Words the intents of :mod:`nerve.recall.facts` read better: the plan steps aside."""
_FILLER = frozenset(
    ["thing", "things", "stuff", "something", "anything", "one", "ones", "again", "exactly",
     "actually", "really", "terminal", "console", "prompt", "bash", "zsh", "successfully",
     "twice", "once", "ever", "every", "each", "whole", "overall", "kind", "sort", "lot",
     "lots", "earlier", "later", "soon", "right", "job", "task", "tool", "script", "please",
     "i'd", "i've", "i'm", "we", "us", "our", "mine", "myself", "did", "does", "do", "x",
     "them", "they", "their", "check", "checked", "checking", "begin", "began", "begun",
     "come", "came", "view", "viewed", "look", "looked", "mention", "mentioned", "mentioning",
     "contain", "contained", "containing", "word", "words", "normally", "properly",
     "correctly", "fine", "local", "web", "duration", "while", "try", "tried", "call",
     "called", "named", "name", "doing", "invoke", "invoked", "kick", "kicked", "off",
     "fire", "fired", "bring", "brought", "put", "same", "other", "another", "whatever",
     "appear", "appears", "appeared", "show", "showed", "shown", "under", "inside", "within",
     "below", "happen", "happened", "next", "then", "just", "right"]
)  # fmt: skip
"""Words a question may hold that name nothing and change nothing."""
_CHANGE = re.compile(
    r"\b(drop\w*|fall\w*|fell|rise|rising|rose|calm\w*|climb\w*|spike\w*|jump\w*|settl\w*|"
    r"(?:go|goes|went|come|came) (?:down|up|back))\b"
)
"""Words asking when a reading turned, not what it was."""
_SAID_MEASURE = {"duration": "how long", "running": "stopping or ending", "exit": "how it ended"}
"""A measure a reading has no answer for, as the question put it."""
_MEASURE_WORDS = {
    "exit": frozenset(["status", "code", "result", "outcome", "end", "ended", "return"]),
    "running": frozenset(["status", "state"]),
}
"""Words that said the measure, so name nothing more."""
_QUOTED = re.compile(r"[`\"'“‘]([^`\"'”’]+)[`\"'”’]")

_STOP = frozenset(
    [
        "a",
        "an",
        "the",
        "what",
        "which",
        "who",
        "whom",
        "when",
        "where",
        "how",
        "did",
        "do",
        "does",
        "is",
        "are",
        "was",
        "were",
        "has",
        "have",
        "had",
        "i",
        "me",
        "my",
        "you",
        "your",
        "it",
        "its",
        "this",
        "that",
        "these",
        "those",
        "of",
        "in",
        "on",
        "at",
        "to",
        "for",
        "from",
        "by",
        "with",
        "and",
        "or",
        "any",
        "all",
        "there",
        "so",
        "far",
        "please",
        "show",
        "tell",
        "give",
        "list",
        "much",
        "many",
        "long",
        "used",
        "use",
        "uses",
        "using",
        "most",
        "time",
        "times",
        "spent",
        "spend",
        "been",
        "being",
        "be",
        "am",
        "did",
        "get",
        "got",
        "ever",
        "then",
        "just",
        "still",
        "yet",
        "s",
        "t",
        "up",
        "command",
        "commands",
        "run",
        "ran",
        "runs",
        "typed",
        "executed",
        "exit",
        "code",
        "return",
        "process",
        "processes",
        "program",
        "programs",
        "pid",
        "pids",
        "id",
        "ids",
        "different",
        "distinct",
        "separate",
        "unique",
        "various",
        "window",
        "windows",
        "app",
        "apps",
        "application",
        "applications",
        "focus",
        "focused",
        "switch",
        "switched",
        "in",
        "front",
        "title",
        "titled",
        "screen",
        "machine",
        "computer",
        "box",
        "memory",
        "ram",
        "rss",
        "cpu",
        "processor",
        "busy",
        "load",
        "average",
        "averages",
        "disk",
        "free",
        "space",
        "storage",
        "network",
        "bandwidth",
        "peak",
        "peaked",
        "max",
        "maximum",
        "highest",
        "top",
        "biggest",
        "largest",
        "heaviest",
        "mean",
        "typical",
        "usage",
        "level",
        "total",
        "finish",
        "finished",
        "done",
        "complete",
        "completed",
        "end",
        "ended",
        "stop",
        "stopped",
        "running",
        "alive",
        "still",
        "going",
        "last",
        "first",
        "latest",
        "earliest",
        "recent",
        "recently",
        "most",
        "times",
        "often",
        "count",
        "number",
        "before",
        "after",
        "during",
        "between",
        "since",
        "around",
        "about",
        "until",
        "till",
        "ago",
        "now",
        "currently",
        "today",
        "yesterday",
        "happened",
        "happening",
        "going",
        "on",
        "events",
        "event",
        "recorded",
        "logged",
        "doing",
        "working",
        "busy",
        "with",
        "shell",
        "our",
        "see",
        "saw",
        "open",
        "opened",
        "start",
        "started",
        "starting",
        "launch",
        "launched",
        "succeed",
        "succeeded",
        "fail",
        "failed",
        "failure",
        "pass",
        "passed",
        "ok",
        "okay",
        "well",
        "whether",
        "if",
    ]
)
_STOP |= frozenset(
    ["titles", "look", "looked", "traffic", "download", "downloaded", "upload", "uploaded",
     "burning", "burned", "hogged", "hogging", "hog", "eating",
     "ate", "busiest", "loaded", "like", "full", "take", "took", "share", "core", "cores",
     "big", "bigger", "grow", "grew", "drop", "dropped", "drops", "fall", "fell", "rise", "rose",
     "climb", "climbed", "spike", "spiked", "jump", "jumped"]
)  # fmt: skip
_STOP |= frozenset(
    (
        "why",
        "anything",
        "something",
        "happening",
        "type",
        "enter",
        "entered",
        "finally",
        "eventually",
        "go",
        "went",
        "result",
        "returned",
        "with",
    )
)


@dataclass(frozen=True)
class Subject:
    """What a question is about: a kind (see the module), the words naming one thing of that
    kind (None: every one), a pid, and for ``reading`` which reading."""

    kind: str
    name: str | None = None
    pid: int | None = None
    reading: str | None = None
    status: str | None = None  # commands: "failed" or "ok" (how they ended), None: any
    unplaced: tuple[str, ...] = ()  # words of the question naming nothing the log holds
    nth: str | None = None  # "first": the first run of it ("how did my first build end?")

    def to_json(self) -> dict[str, object]:
        return {"kind": self.kind, "name": self.name, "pid": self.pid, "reading": self.reading,
                "status": self.status}  # fmt: skip


@dataclass(frozen=True)
class Plan:
    """A question's parts; ``anchor`` is what ``before`` / ``after`` / ``during`` refer to."""

    question: str
    window: Window | None
    subject: Subject
    measure: str
    anchor: Subject | None = None
    during: Subject | None = None  # "while memgrow ran": the window is that command's run

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {
            "window": None if self.window is None else self.window.to_json(),
            "subject": self.subject.to_json(),
            "measure": self.measure,
            "anchor": None if self.anchor is None else self.anchor.to_json(),
        }
        return out | ({"during": self.during.to_json()} if self.during is not None else {})


def _clean(question: str) -> str:
    text = " ".join(question.lower().replace("’", "'").split())
    text = re.sub(r"\bwhat's\b", "what is", text)
    text = re.sub(r"\b(\w+)'s\b", r"\1", text)
    return text.rstrip("?!. ")


def _name(text: str, keep: frozenset[str] = frozenset()) -> str | None:
    """The words left naming a thing: quoted text, else the words no rule here reads (but
    those in ``keep``)."""
    if quoted := _QUOTED.search(text):
        return quoted[1].strip() or None
    text = re.sub(r"\b(exit|return) (code|status)\b", " ", text)
    words = [
        w
        for w in re.findall(r"[\w./~+-]+", text)
        if (w in keep or w not in _STOP) and not w.isdigit()
    ]
    words = [w.strip(".") for w in words if re.search(r"[a-z0-9]", w.strip("."))]
    return " ".join(words) or None


def unplaced(name: str | None, placed: str, measure: str = "list") -> tuple[str, ...]:
    """The words of ``name`` left over once ``placed`` named the thing, but for filler that
    changes nothing ("the last *thing* I ran") and the words of the measure asked ("what
    *status* did false return?"): "what http *status* did curl get?" asks for something the
    log does not hold, and answering with curl's run would answer another question."""
    have = set(placed.split()) | _FILLER | _MEASURE_WORDS.get(measure, frozenset())
    return tuple(w for w in (name or "").split() if w not in have)


def _reading(text: str) -> str | None:
    for name, pattern in _READINGS:
        if re.search(pattern, text):
            return name
    return None


def _measure(text: str) -> str:
    """The measure the words ask for (the first rule that fits)."""
    rules = (
        ("exit", r"\b(exit (?:code|status)|exit(?:ed)? with|return code|returns?|returned|"
                 r"how did .+ (?:go|end)|how .+ went|result|succeed(?:ed)?|fail(?:ed)?|"
                 r"pass(?:ed)?)\b"),
        ("running", r"\b(finish(?:ed)?|still (?:running|going|up|alive|there|open|on)|done|"
                    r"complete[d]?|is \S+ running"
                    r"|stopp?(?:ed)?|end(?:ed)?|alive)\b"),
        ("duration", r"\b(how long|time spent|how much time|spend|spent|duration)\b|"
                     r"^(?:total )?time (?:spent )?in\b"),
        ("count", r"\b(how many|how often|number of|count)\b"),
        ("most", r"\b(which|what)\b.*\b(most(?! recent)|top|biggest|largest|heaviest|"
                 r"highest|using|"
                 r"hogg(?:ing|ed)|eating|burning)\b"),
        ("first", r"\b(first|earliest)\b"),
        ("last", r"\b(last|latest|most recent(?:ly)?|finally)\b"),
        ("when", r"\bwhen\b|\bwhat time\b"),
        ("peak", r"\b(peak(?:ed)?|max(?:imum)?|highest|most|how much|top|busiest|how big|"
                 r"how many cores|share)\b"),
        ("average", r"\b(average|mean|typical|how busy|usage|level)\b"),
    )  # fmt: skip
    for measure, pattern in rules:
        if re.search(pattern, text):
            return measure
    return "list"


def _attention(text: str, window: Window | None, question: str) -> Plan:
    measure = "unusual" if _UNUSUAL.search(text) else "why" if "why" in text.split() else "list"
    if re.search(r"\b(how many|how often|number of|count)\b", text):
        measure = "count"
    elif re.search(r"\b(did|does|has) nerve\b", text):
        measure = "why"  # "did nerve notice the hog?": each decision about it, and why
    held = re.search(r"\b(held|withheld|hold)\b", text) is not None
    rest = _ATTENTION_WORDS.sub(" ", _ATTENTION.sub(" ", text))
    name = _name(rest, _READING_WORDS)
    subject = Subject("attention", name, reading="held" if held else "surfaced")
    return Plan(question, window, subject, measure)


_ORDER = re.compile(r"\b(before|after)\s+(?:i (?:was in|used|switched to|opened) )?([^,]+)(,.*)?$")
_COMPARE = re.compile(r"\b(before or after|after or before|which came first|what came first|vs\.?|"
                      r"versus|or was it)\b")  # fmt: skip
_ANCHOR_FAILED = re.compile(r"\b(fail\w*|broke\w*|errored|did not work|didn't work)\b")
_ANCHOR_OK = re.compile(r"\b(work(?:ed|s)?|pass(?:ed|es)?|succeed\w*|success\w*|fixed)\b")


def _order(text: str) -> tuple[str, Subject, str] | None:
    """``… before X`` / ``… after X`` (or ``after X, what …``) with X a thing, not a time: the
    measure, X (how it ended, and whether its first time), and the rest of the question."""
    match = _ORDER.search(text)
    if match is None:
        return None
    said = match[2]
    status = "failed" if _ANCHOR_FAILED.search(said) else "ok" if _ANCHOR_OK.search(said) else None
    nth = "first" if re.search(r"\b(first|earliest)\b", said) else None
    thing = re.sub(r"\bthe (?:last|first) time\b", " ", _LOOKING.sub(" ", said))
    thing = _ANCHOR_OK.sub(" ", _ANCHOR_FAILED.sub(" ", thing))
    name = _name(thing)
    head = text[: match.start()] + " " + (match[3] or "").lstrip(",")
    return (match[1], Subject("window", name, status=status, nth=nth), head) if name else None


def _side(text: str, known: Known) -> Subject | None:
    """One side of a comparison: a changed file, else a command, the words name."""
    words = (_name(_ANCHOR_OK.sub(" ", _ANCHOR_FAILED.sub(" ", text))) or "").split()
    named = [w for w in known.file_words(words) if "." in w]
    if named:
        return Subject("file", " ".join(named))
    ran = known.command_words(words)
    return Subject("command", " ".join(ran)) if ran else None


def _compared(text: str, question: str, window: Window | None, known: Known) -> Plan | None:
    """ "X before or after Y?", "X vs Y: which came first?", "which came first, X or Y?": the
    two sides (a file or a command each); None when either names nothing known."""
    rest = re.sub(r"\b(?:which|what) (?:\w+ )?(?:came|started|happened|ran|was) first\b|"
                  r"\b(?:which|what) \w+ first\b", " ", text)  # fmt: skip
    parts = re.split(r"\bbefore or after\b|\bafter or before\b|\bvs\.?|\bversus\b|,|:|\bor\b",
                     rest)  # fmt: skip
    sides = [side for part in parts if (side := _side(part, known)) is not None]
    if len(sides) != 2:
        return None
    return Plan(question, window, sides[0], "compare", sides[1])


def _ordered(text: str, question: str, window: Window | None, known: Known) -> Plan | None:
    """A question of order: what came just before or after a command or a window (the files
    changed, the commands run or the window in focus, as the rest of it asks)."""
    compared = _COMPARE.search(text) or re.search(r"\b(?:which|what) \w+ first\b", text)
    if compared:  # "did I edit main.c before or after the build?": two things, not one
        return _compared(text, question, window, known)
    order = _order(text)
    if order is None:
        return None
    measure, anchor, head = order
    yes_no = re.match(r"\s*(did|was|were|is|has|have)\b", head) is not None
    asked = _side(head, known) if yes_no else None
    other = _side(anchor.name or "", known) if asked is not None else None
    if asked and other is not None:  # "did I start yes before memgrow?": both, and which first
        return Plan(question, window, asked, "compare", other)
    ran = " ".join(known.command_words((anchor.name or "").split()))
    seen = known.window_words(anchor.name or "")
    by_window = _WINDOW.search(text) is not None and len(seen.split()) >= len(ran.split())
    if ran and not by_window and (anchor.status or len(ran.split()) >= len(seen.split())
                                  or _COMMAND.search(head)):  # fmt: skip
        kind = "file" if _FILE.search(head) and not _COMMAND.search(head) else "command"
        mark = Subject("command", ran, status=anchor.status, nth=anchor.nth)
        return Plan(question, window, Subject(kind), measure, mark)
    return Plan(question, window, Subject("window", _name(head)), measure, anchor)


def _file(text: str, window: Window | None, question: str, known: Known) -> Plan | None:
    """A question about changed files (which, how many changes, when), or None. Its name is
    the words naming a changed file or folder; its status ``added`` or ``deleted`` when it
    asks for those alone."""
    words = (_name(text) or "").split()
    named = known.file_words(words)
    if not named and _FILE.search(text):  # "did I edit README.md?": a file no change touched
        named = [w for w in words if re.fullmatch(r"[\w-]+\.\w{1,5}", w)]
    if not (_FILE.search(text) or any("." in w for w in named)):
        return None
    if _COMMAND.search(text) or _PROCESS.search(text) or (_FOLDER.search(text) and not named):
        return None
    if re.search(r"\b(ports?|listening|windows?|apps?)\b", text):
        return None
    if _names_app(words, named, known):
        return None  # "which file was open in vim at 19:24:10?": the window's title says
    status = "added" if _FILE_ADDED.search(text) else None
    status = "deleted" if _FILE_DELETED.search(text) else status
    measure = _measure(text)
    if not named and status is None and measure == "list" and window is None:
        return None  # "which files changed?": the intents list them, newest first
    said = " ".join(w for w in words if not _FILE.fullmatch(w) and w not in _FOLDER_WORDS)
    left = unplaced(said, " ".join(named), measure) if named else ()
    subject = Subject("file", " ".join(named) or None, status=status, unplaced=left)
    return Plan(question, window, subject, measure)


_IN_FOLDER = re.compile(r"\b(?:in|under|inside|from)\s+(?:the\s+|my\s+)?([\w.~/-]+)")


def _folder(
    text: str, question: str, window: Window | None, measure: str, known: Known
) -> Plan | None:
    """A question about folders: which ones were worked in, what happened in one ("what did
    I run in src?": ``src`` is a folder commands ran in), or where a command ran ("where did
    I run make build?": the folder subject named by the command's words). A folder word that
    names a window's title instead ("the directory listing") is about that window."""
    inside = _IN_FOLDER.search(text)
    named = inside is not None and known.folder_word(inside[1].rstrip("/").rsplit("/", 1)[-1])
    if not (_FOLDER.search(text) or named):
        return None
    words = [w for w in re.findall(r"[\w./~+-]+", text) if w not in _FOLDER_WORDS]
    name = _name(" ".join(words))
    if named and inside is not None:
        name = inside[1]
    seen = known.window_words(_name(text) or "")
    if not named and len(seen.split()) >= 2 and set(seen.split()) & set(_FOLDER_WORDS):
        return Plan(question, window, Subject("window", seen), measure)
    return Plan(question, window, Subject("folder", name), measure)


def _names_app(words: list[str], named: list[str], known: Known) -> bool:
    """Whether the words name an app in focus (or a kind of app: "editor"), not a file."""
    return any(app_hit(w, w) or (known.window_words(w) == w and w not in named) for w in words)


def _status(text: str) -> tuple[str | None, str]:
    """How the commands asked about ended ("failed", "ok" or None: any), and the text without
    the words that said it."""
    if _FAILED.search(text):
        return "failed", _FAILED.sub(" ", text)
    if _OK.search(text) and re.search(r"\b(when|first|last|finally|how many|how often)\b", text):
        return "ok", _OK.sub(" ", text)
    return None, text


def _thing(text: str, measure: str, known: Known, status: str | None) -> Subject | None:
    """The subject of a question about a thing (command, process, window, reading): a word
    naming a recorded command (``known``) makes it a command."""
    pid = _PID.search(text)
    name, reading = _name(text), _reading(text)
    hit = " ".join(known.command_words(name.split())) if name else ""
    left = unplaced(name, hit, measure)
    if pid:
        return Subject("process", None, int(pid[1] or pid[2]), reading)
    nth = "first" if measure != "first" and re.search(r"\b(first|earliest)\b", text) else None
    busy = reading in ("cpu", "memory") and measure in ("peak", "average", "most")
    if hit and busy:  # "peak CPU of the yes command?": its process's samples
        return Subject("process", hit, reading=reading)
    if _COMMAND.search(text) or measure == "exit":
        return Subject("command", hit or name, status=status, unplaced=left if hit else (),
                       nth=nth)  # fmt: skip
    if _PROCESS.search(text):
        return Subject("process", name, reading=reading)
    if _WINDOW.search(text) or re.search(r"\b(was|were) i in\b", text):
        return Subject("window", name)
    seen = known.window_words(_name(_LOOKING.sub(" ", text)) or "")
    if len(seen.split()) > len(hit.split()):  # "when was I reading Stack Overflow?"
        return Subject("window", seen)
    use = _USE.search(text)
    if hit and use is not None:  # "how many cores did cpuhog use?", "how big did x get?"
        return Subject("process", hit, reading="cpu" if use[1] else "memory")
    if hit and reading is None:
        return Subject("command", hit, status=status, unplaced=left, nth=nth)
    if status is not None and reading is None:
        return Subject("command", None, status=status)  # "what failed?"
    if name and measure == "duration":
        return Subject("window", name)  # "how much time did I spend in firefox?"
    if reading is not None:
        thing = bool(name) or measure == "most"
        return Subject("process" if thing else "reading", name, reading=reading)
    if name and measure == "running":
        return Subject("command", name)
    return None


_DURING = re.compile(
    r"\b(?:while|during)\s+(?:i was running\s+|i ran\s+)?(.+?)"
    r"(?:\s+(?:was|were|is)\s+(?:still\s+)?(?:running|going|on|up)|\s+ran|\s+run)?\s*(?:,|$)"
)
_SOME_TIME = Window(0, 0, "during", clock=True)
"""The window of a plan read "during X", until X's run is found (:mod:`.during`)."""


_AFTER_END = re.compile(
    r"\b(?:after|when|once)\s+(.+?)\s+(?:had\s+|was\s+)?(?:finished|ended|exited|stopped|done|"
    r"completed|quit)\b"
)
_CAME_BACK = re.compile(r"\b(?:when|after|once)\s+i\s+(?:came|got|was)\s+back\b")


def _during(text: str) -> tuple[Subject, str] | None:
    """A time named by something else, and the text without the words that named it: ``while
    X was running`` / ``during X`` (X's run: a ``command`` subject), ``after X finished``
    (just after its end: ``ended``), ``when I came back`` (just after time away: ``away``)."""
    if match := _CAME_BACK.search(text):
        return Subject("away"), (text[: match.start()] + " " + text[match.end() :]).strip()
    kind, match = "command", _DURING.search(text)
    if match is None and (match := _AFTER_END.search(text)) is not None:
        kind = "ended"
    words = re.sub(r"\b(the|my|a|an|that|this|those|these)\b", " ", match[1]) if match else ""
    if match is None or not words.split():
        return None
    rest = (text[: match.start()] + " " + text[match.end() :]).strip()
    return Subject(kind, " ".join(words.split())), rest


def window_of(question: str, now_ns: int, tz: tzinfo | None) -> Window | None:
    """The window the question names, if any (as :func:`parse` reads it)."""
    return find_window(_clean(question), now_ns, tz)[0]


def parse(
    question: str,
    *,
    now_ns: int,
    tz: tzinfo | None,
    known: Known | None = None,
    during: Window | None = None,
) -> Plan | None:
    """The question's plan, or None when it names nothing this planner reads; ``known`` holds
    the log's names (a question naming a recorded command is about it); ``during`` is the
    window when the question named it by a command's run ("while memgrow ran")."""
    text = _clean(question)
    window, rest = find_window(text, now_ns, tz) if during is None else (during, text)
    named = _during(rest) if window is None else None
    if named is not None:
        inner = parse(named[1], now_ns=now_ns, tz=tz, known=known, during=_SOME_TIME)
        what = inner.subject if inner is not None else Subject("activity")
        how = inner.measure if inner is not None else "list"
        return Plan(question, _SOME_TIME, what, how, during=named[0])
    if _ATTENTION.search(rest):
        return _attention(rest, window, question)
    if _DAEMON.search(rest):
        return Plan(question, window, Subject("daemon"), "list")
    ordered = _ordered(rest, question, window, known or Known())
    if ordered is not None:
        return ordered
    files = _file(rest, window, question, known or Known())
    if files is not None:
        return files
    if _DEFER.search(rest) and not _names_app((_name(rest) or "").split(), [], known or Known()):
        return None
    status, plain = _status(rest)
    measure = _measure(plain)
    if _AWAY.search(rest) and _reading(rest) is None and not _COMMAND.search(rest):
        return Plan(question, window, Subject("away"), measure)
    folder = _folder(rest, question, window, measure, known or Known())
    if folder is not None:
        return folder
    doing = _DOING.search(rest) and not _COMMAND.search(rest) and _reading(rest) is None
    if doing and window is not None:
        return Plan(question, window, Subject("activity"), "list")
    subject = _thing(plain, measure, known or Known(), status)
    anyone = subject is None or (subject.kind in ("command", "process") and not subject.name
                                 and subject.pid is None)  # fmt: skip
    if _RUNNING.search(plain) and anyone:
        return Plan(question, window, Subject("running"), "running")  # what was running?
    failing = subject is not None and subject.status == "failed" and not subject.name
    if failing and measure == "list" and _COMMAND.search(plain) and "fail" in rest:
        return None  # "which commands failed today?": the period intent lists them
    if subject is None:
        if (_HAPPENED.search(rest) or _name(rest) is None) and window is not None:
            return Plan(question, window, Subject("anything"), "list")
        return None
    if subject.kind == "process" and subject.reading and measure in ("count", "list"):
        measure = "peak"  # "how many cores did it use?": its peak
    if subject.kind == "reading" and measure == "when" and _CHANGE.search(plain):
        measure = "running"  # "when did CPU use drop?": a turn, which no reading here finds
    if subject.kind == "reading" and measure in ("duration", "running", "exit"):
        return Plan(question, window, replace(subject, unplaced=(_SAID_MEASURE[measure],)), measure)
    if subject.kind == "reading" and window is None and measure not in ("peak", "when"):
        measure = "last"
    return Plan(question, window, subject, measure)
