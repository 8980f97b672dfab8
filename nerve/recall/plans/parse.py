"""A question in parts: :func:`parse` turns it into a :class:`Plan` — the window it asks
about (:mod:`nerve.recall.plans.window`), the subject and the measure — or None when it names
nothing this planner reads (the older intents and the fallback then try).

**Subjects** (``Subject.kind``): ``anything`` (what happened), ``activity`` (what was I
doing), ``command`` (a shell command, or its words), ``process`` (by name, command line words
or ``pid N``), ``window`` (an app or a window title), ``away`` (time away from the machine,
no input), ``folder`` (where commands ran and files changed), ``reading`` (a sense reading:
``load``, ``cpu``, ``memory``, ``swap``, ``disk`` (free), ``writes``, ``reads``, ``network``,
``energy``), ``attention`` (nerve's own decisions), ``file`` (files changed, by name or
folder; ``status`` ``added`` or ``deleted``), ``running`` (what was running at a time, or is
still running), ``daemon`` (nerve's own daemon: when it started and stopped, its senses),
``port`` (a listening port by its number: when it opened and closed, by which process).

**Measures**: ``list``, ``count``, ``duration`` (time spent), ``first``, ``last``, ``when``,
``peak``, ``lowest``, ``average``, ``most`` (which one had the most), ``exit`` (exit status),
``fell`` / ``rose`` (when a reading turned),
``running`` (still running? finished?), ``before`` / ``after`` (order, against
``Plan.anchor``), ``why`` and ``unusual`` (attention).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from datetime import tzinfo

from nerve.recall.plans.spelling import Speller
from nerve.recall.plans.window import TIME_WORDS, Window, edge_window, find_window
from nerve.recall.plans.words import Known, app_kind

__all__ = ["Plan", "Subject", "mended", "parse", "window_of"]

_READINGS = (
    ("load15", r"\bload15\b"),
    ("load5", r"\bload5\b"),
    ("load", r"\bload1?(?: average)?s?\b"),
    ("reads", r"\bdisk\b(?=.*\bread(?:s|ing)?\b)|\bread(?:s|ing)?\b(?=.*\bdisk\b)"),
    (
        "writes",
        r"\b(?:disk (?:writ\w*|i/?o|activity)|writ(?:es|ing) to (?:the )?disk|disk)\b(?=.*"
        r"\b(?:writ\w*|i/?o|activity)\b)|\bdisk i/?o\b",
    ),
    ("disk", r"\b(?:free disk|disk space|disk|free space|storage)\b"),
    ("network", r"\b(?:network|bandwidth|download(?:ed|ing)?|upload(?:ed|ing)?|traffic)\b"),
    ("swap", r"\bswap\w*\b"),
    ("memory", r"\b(?:memory|ram|rss)\b"),
    ("energy", r"\b(?:energy|power use|power draw|joules?|watts?)\b"),  # "the cpu's energy"
    ("cpu", r"\b(?:cpu|processor|busy|cores|maxed)\b"),
    ("load", r"\bloaded\b"),  # "how loaded was the box?", unless it said the processor
)
_READING_WORDS = frozenset(["memory", "ram", "cpu", "load", "disk", "network", "processor"])
_READING_FILLER = frozenset(
    ["left", "fill", "fills", "filling", "filled", "speed", "speeds", "rate", "rates", "usage",
     "throughput", "writes", "write", "writing", "reads", "read", "reading", "io", "i/o",
     "activity", "swap", "swapping", "swapped", "measured", "estimated", "counter", "real",
     "numbers", "guesses", "guess", "just", "does", "have", "has", "this", "calm", "down",
     "maxed", "out", "being", "stop", "low", "lowest", "dip", "minimum", "min", "least",
     "energy", "power", "draw", "joules", "watts", "over", "day", "know", "there", "how", "change",
     "changed", "changes", "load1", "load5", "load15", "size", "capacity", "total", "sum",
     "big", "large", "altogether"]
)  # fmt: skip
"""Words a question about a reading may hold that name no process ("disk space *left*")."""
_ATTENTION = re.compile(
    r"\b(surfaced?|surfacing|held|withheld|hold|interrupt\w*|notif\w*|alert\w*|unusual|"
    r"anomal\w*|highlights?|abnormal|strange|weird|odd|out of the ordinary|you show\w*|"
    r"showed me|shown to me|attention|decisions?|flagg?(?:ed|s)?|you (?:warn\w*|notic\w*|rais\w*)|"
    r"nerve (?:\w+ )?(?:tell|told|say|said|flag\w*|notic\w*|warn\w*|spot\w*|mention\w*|catch|"
    r"caught|decid\w*|br(?:ing|ings|inging|ought) (?:\w+ )?up|rais\w*|point\w* out))\b"
)
_DAEMON = re.compile(
    r"\b(daemon|senses?|observations)\b|\byou\b.*\b(?:start\w*|stop\w*|begin|began|quit\w*)\s+"
    r"(?:watch\w*|record\w*|observ\w*|log\w*)\b|\b(?:were|are) you (?:\w+ )?(?:recording|watching|"
    r"running|up)\b|\bnerve\b.*\b(start\w*|stop\w*|begin|began|record\w*|"
    r"run\w*|ran|watch\w*|up|alive|quit|exit\w*|restart\w*|crash\w*|load\w*|shut\w*|die|died|"
    r"dead|uptime|memory|ram|rss|pid|process id|heavy)\b|\b(memory|ram|pid|process id)\b.*\bnerve\b"
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
_CHECKS = re.compile(
    r"\b(?:checks|(?:any|the|a|which|what|failed|failing|passed|workflow) checks?|"
    r"checks? (?:run|ran|fail\w*|pass\w*|fired|verdicts?|results?|on))\b"
)
"""The checks a workflow ran on files, and their verdicts (not "check if it ran")."""
_PROCESS = re.compile(r"\b(process|processes|program|programs|pid)\b")
_WINDOW = re.compile(
    r"\b(windows?|apps?|applications?|focus(?:ed)?|switch(?:ed)? to|(?:in|up) front|titled?|pages?|"
    r"sites?|websites?|browsing|"
    r"on (?:my |the )?screen)\b"
)
_NAMED_PAGE = re.compile(r"\bnerve (?:\w+ )?(?:pages?|tabs?|windows?|sites?|websites?|docs)\b")
"""A window named by a word of its title ("the nerve *page*"), not nerve's own daemon."""
_AWAY = re.compile(
    r"\b(away|afk|idle|no input|inactive|(?:i|we) (?:come|came|got|get) back|(?:come|came) back|"
    r"(?:left|leave|leaving|stepped away from) (?:the|my) (?:desk|computer|keyboard|machine)|"
    r"back (?:at|to) (?:the|my) "
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
_DOING = re.compile(
    r"\b(doing|working on|up to|busy with|what did i do|activity|activities|walk me through)\b"
)
_HAPPENED = re.compile(
    r"\b(happen|happened|happening|went on|going on|events?|recorded|logged|recap|summar\w*|"
    r"overview)\b"
)
_FAILED = re.compile(
    r"\b(fail\w*|(?:did not|didn't|did n't|not) (?:succeed|work|pass)\w*|unsuccessful|"
    r"errored|broke|broken|(?:(?:exit(?:ed)?|return(?:ed)?) (?:with )?(?:an? )?)?non[- ]?zero"
    r"(?: (?:exit|return) (?:code|status))?|(?:exit|return) (?:code|status) (?:was |is |of )?"
    r"(?:not|other than) (?:0|zero))\b"
)
_OK = re.compile(r"\b(succeed\w*|success\w*|work(?:ed|s)?|pass(?:ed|es)?)\b")
_FILE = re.compile(
    r"\b(files?|edit(?:s|ed|ing)?|modif\w*|chang(?:e|ed|es)|creat\w*|added|sav(?:e|ed|es|ing)|wrote|"
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
_BARE_PID = re.compile(
    r"(?<![\w:.$-])(\d{4,7})(?![\w:.%]|\s*(?:ms|s|sec\w*|min\w*|mib|kib|gib|mb|gb)\b)"
)
"""A number alone that is no time nor size: a pid ("what was 17085?")."""
_DEFER = re.compile(
    r"\b(slowest|longest|slow|per app|each app|new|ports?|listening|files?|"
    r"changed|edited|modified|budget|errors?|in [~/.]\S*)"
)
"""Words the intents of :mod:`nerve.recall.facts` read better: the plan steps aside."""
_PORT = re.compile(
    r"\bport\s*(\d{2,5})\b|\b(?:on|:)\s*(\d{4,5})\b|"
    r"\b(\d{4,5})\b(?=.*\b(?:open\w*|clos\w*|listen\w*|bound|bind|address|port|localhost|"
    r"interfaces?)\b)|"
    r"\b(?:open\w*|clos\w*|listen\w*|bound|bind|address|grab\w*)\b.*?\b(\d{4,5})\b|"
    r"\b(?:server|web|http) (port)\b|"
    r"\b(server)\b(?=.*\b(?:address|bound|localhost|interface)\b)|"
    r"\b(?:address|bound|localhost|interface)\b.*\b(server)\b"
)
"""A port by its number ("is 8765 still open?", "which process was on 8765?"), or the
server's port."""
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
     "below", "happen", "happened", "next", "then", "just", "right", "hit", "as", "worst",
     "very", "attempt", "attempts", "pls", "plz", "line", "itself", "all", "in",
     "um", "uh", "hey", "hmm", "ok", "okay", "so", "like", "exactly", "altogether", "combined"]
)  # fmt: skip
"""Words a question may hold that name nothing and change nothing."""
_CHANGE = re.compile(
    r"\b(?:(drop\w*|fall\w*|fell|calm\w*|settl\w*|eas(?:e|ed)|quiet\w*|stop\w* being|"
    r"(?:go|goes|went|come|came) (?:down|back))|(rise|rising|rose|climb\w*|spike\w*|jump\w*|"
    r"shot up|(?:go|goes|went|come|came) up))\b"
)
"""Words asking when a reading turned (fell, or rose), not what it was."""
_SAID_MEASURE = {"duration": "how long", "running": "stopping or ending", "exit": "how it ended"}
"""A measure a reading has no answer for, as the question put it."""
_MEASURE_WORDS = {
    "exit": frozenset(["status", "code", "result", "outcome", "end", "ended", "return"]),
    "running": frozenset(["status", "state", "exited", "exit", "quit", "ever"]),
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
    ["page", "pages", "site", "sites", "website", "websites",
     "titles", "look", "looked", "traffic", "download", "downloaded", "upload", "uploaded",
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
    """The question in lower case and plain words: "what's" is "what is", "didnt" and "didn't"
    are "did not", "of the day" is "today", "just now" is "last" (the newest)."""
    text = " ".join(question.lower().replace("’", "'").split())
    text = re.sub(r"\bwhat's\b", "what is", text)
    text = re.sub(r"\b(did|does|do|was|were|is|are|has|have|had|could|would)(?:n't|nt)\b",
                  r"\1 not", text)  # fmt: skip
    text = re.sub(r"\b(?:(?:of|over|during|through(?:out)?) the (?:whole )?day|all day)\b", "today",
                  text)  # fmt: skip
    text = re.sub(r"\b(\w+)'s\b", r"\1", text)
    text = re.sub(r"\bavg\b", "average", text)
    text = re.sub(r"\b(?:(1|5|15)[- ]?min(?:ute)?s? load|load (1|5|15))\b(?! ?(?:min|sec|hour))",
                  lambda m: f"load{m[1] or m[2]}", text)  # fmt: skip
    text = re.sub(r"\bcmdlines?\b", "command line", text)
    text = re.sub(r"\b(?:and )?(?:did|was) it (?:work|succeed|pass|fail|ok|okay)\b", " exit status",
                  text)  # fmt: skip
    text = re.sub(r"\bcmd\b", "command", text)
    text = re.sub(r"\bfocus (?:chang|mov|shift)\w*", "focus switches", text)  # of windows
    text = re.sub(r"\b(?:just now|a moment ago)\b", "last", text)  # the newest, however long ago
    return _SHORT.sub(lambda m: _SHORT_FOR[m[1]], text).rstrip("?!. ")


_SHORT_FOR = {"proc": "process", "procs": "processes", "mem": "memory"}
_SHORT = re.compile(r"\b(procs?|mem)\b(?![./-]\w)")
"""Clipped words a terse question uses for the parser's own ("top mem proc")."""


def _name(text: str, keep: frozenset[str] = frozenset()) -> str | None:
    """The words left naming a thing: quoted text, else the words no rule here reads (but
    those in ``keep``)."""
    if quoted := _QUOTED.search(text):
        return quoted[1].strip() or None
    text = re.sub(r"\b(exit|return) (codes?|status(?:es)?)\b", " ", text)
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


def _busy(text: str) -> str | None:
    """The CPU, when the words ask which process was busiest ("the busiest process")."""
    found = re.search(r"\b(busiest|top|hogg\w*|burn\w*|work\w* (?:the )?hardest)\b", text)
    return "cpu" if found and _PROCESS.search(text) else None


def _reading(text: str) -> str | None:
    for name, pattern in _READINGS:
        if re.search(pattern, text):
            return name
    return None


_MEASURES = (
    ("exit", r"\b(exit (?:codes?|status(?:es)?)|exit(?:ed)? with|return codes?|returns?|returned|"
             r"exit(?:ed)? (?:ok|okay|clean(?:ly)?|fine|normally|successfully)|clean exit|"
             r"crash(?:ed)?|"
             r"how did .+ (?:go|end)|how .+ went|result|succeed(?:ed)?|fail(?:ed)?|"
             r"pass(?:ed)?)\b"),
    ("running", r"\b(finish(?:ed)?|still (?:running|going|up|alive|there|open|on)|done|"
                r"complete[d]?|is \S+ running"
                r"|stopp?(?:ed)?|end(?:ed)?|alive)\b"),
    ("duration", r"\b(how long|time spent|how much time|spend|spent|duration|total time)\b|"
                 r"^(?:total )?time (?:spent )?in\b"),
    ("count", r"\b(how many|how often|number of|count)\b"),
    ("most", r"\b(which|what)\b.*\b(most(?! recent)|top|biggest|largest|heaviest|"
             r"highest|using|"
             r"hogg(?:ing|ed)|eating|burning)\b"),
    ("first", r"\b(first|earliest)\b"),
    ("last", r"\b(last|latest|most recent(?:ly)?|finally)\b"),
    ("when", r"\bwhen\b|\bwhat time\b"),
    ("lowest", r"\b(lowest|minimum|min|(?<!at )least|dip\w*|how low|bottom(?:ed)?)\b"),
    ("peak", r"\b(peak(?:ed)?|max(?:imum)?|highest|most|how much|top|busiest|how big|worst|"
             r"how many cores|share)\b"),
    ("average", r"\b(average|mean|typical|how busy|how loaded|overall|usage|level)\b"),
)  # fmt: skip
"""Each measure and the words that ask for it, in the order they are tried."""


def _measure(text: str) -> str:
    """The measure the words ask for (the first rule that fits)."""
    for measure, pattern in _MEASURES:
        if re.search(pattern, text):
            return measure
    return "list"


_NOT_NAMES = frozenset(["plus", "but", "total", "bother", "bothered"])
_IN_A_TITLE = frozenset(["file", "files", "document", "documents", "open", "opened"])
"""Words a window's title answers ("which file was open in vim?")."""
"""Words of a question about attention that name no reading or thing."""


def _attention(text: str, window: Window | None, question: str) -> Plan:
    measure = "unusual" if _UNUSUAL.search(text) else "why" if "why" in text.split() else "list"
    if re.search(r"\b(how many|how often|number of|count|total)\b", text):
        measure = "count"
    elif re.search(r"\b(did|does|has) nerve\b", text):
        measure = "why"  # "did nerve notice the hog?": each decision about it, and why
    held = re.search(r"\b(held|withheld|hold)\b", text) is not None
    nth = re.search(r"\b(?:(first|earliest)|last|latest|newest|most recent)\b", text)
    one = re.search(r"\bdecisions?\b", text) is not None  # "first alert": the surfaced list
    if nth and measure == "list" and not held and one:
        measure = "first" if nth[1] else "last"  # "nerve's last decision": surfaced or held
    rest = _ATTENTION_WORDS.sub(" ", _ATTENTION.sub(" ", text))
    said = (_name(rest, _READING_WORDS) or "").split()
    negated = held or measure == "why"  # "held and not shown", "why did nerve not tell me?"
    ignored = _FILLER | _NOT_NAMES | ({"not"} if negated else set())
    name = " ".join(w for w in said if w not in ignored) or None
    subject = Subject("attention", name, reading="held" if held else "surfaced")
    return Plan(question, window, subject, measure)


_ORDER = re.compile(
    r"\b(before|after|once|since)\s+(?:i (?:was in|used|switched to|opened) )?([^,]+?)"
    r"(,.*|\s+(?=(?:did|was|were|has|had|is|are) (?:any|some|every)\w*\b.*$).*)?$"
)
_COMPARE = re.compile(r"\b(before or after|after or before|which came first|what came first|vs\.?|"
                      r"versus|or was it)\b")  # fmt: skip
_BROKE = re.compile(r"\b(break|go wrong|went wrong|errors?|crash(?:ed)?)\b")
"""Other words a yes-or-no question of order uses for a failure ("did something break?")."""
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
    measure = "before" if match[1] == "before" else "after"  # "once X passed": after it
    ended = re.search(r"\b(?:pass(?:ed)?|work(?:ed)?|succeeded|fail(?:ed)?|broke)\b", said)
    if match[1] in ("once", "since") and (status is None or ended is None):
        return None  # "once a day", "since the build, any failures?": no run said to end so
    return (measure, Subject("window", name, status=status, nth=nth), head) if name else None


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
        ended = _status(head)[0] or ("failed" if _BROKE.search(head) else None)
        asked = Subject(kind, status=ended if kind == "command" else None)
        return Plan(question, window, asked, measure, mark)
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
    if re.search(r"\bfocus", text) and not named:
        return None  # "how often did the focus change?": windows, no file named
    if _reading(text) is not None and not named:
        return None  # "did disk usage change?": the reading
    if _names_app(words, named, known):
        return None  # "which file was open in vim at 19:24:10?": the window's title says
    titled = known.window_words(" ".join(named)) if named else ""
    if titled and (_measure(text) == "duration" or re.search(r"\bfocus", text)):
        return Plan(question, window, Subject("window", titled), "duration")  # "how long was
        # guide.md focused?": the time a window titled by it was in front
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
    cds = re.search(r"\bcds?\b|\bchang\w* (?:the )?(?:director|folder|dir)", text)
    if measure == "count" and cds:
        return Plan(question, window, Subject("command", "cd"), measure)  # "how many cd's?"
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
    return any(app_kind(w) or (known.window_words(w) == w and w not in named) for w in words)


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
    pid = _PID.search(text) or (None if re.search(r"\bports?\b", text) else _BARE_PID.search(text))
    if measure == "exit":  # "did memgrow exit cleanly or crash?": the measure, not a name
        text = re.sub(r"\b(clean(?:ly)?|crash(?:ed)?|ok|okay|fine|normally)\b", " ", text)
    name, reading = _name(text), _reading(text) or _busy(text)
    kept = [w for w in (name or "").split() if reading is None or w not in _READING_FILLER]
    hit = " ".join(known.command_words(kept))  # "disk *reading*" names no command
    left = unplaced(name, hit, measure)
    number = next((g for g in pid.groups() if g), "") if pid else ""
    words = re.search(r"\b(commands?|typed|mention\w*|contain\w*|in (?:it|them))\b", text)
    if pid and words and not _PID.search(text):  # "commands with 8765 in them"
        return Subject("command", number, status=status)
    if pid:
        return Subject("process", None, int(number), reading)
    nth = "first" if measure != "first" and re.search(r"\b(first|earliest)\b", text) else None
    busy = reading in ("cpu", "memory") and measure in ("peak", "average", "most")
    if hit and busy:  # "peak CPU of the yes command?": its process's samples
        return Subject("process", hit, reading=reading)
    if hit and _PID_OF.search(text):  # "which pid did the yes command get?": its process's
        return Subject("process", hit, reading=reading)
    if _COMMAND.search(text) or measure == "exit":
        plain = " ".join(w for w in (name or "").split() if w not in _FILLER) or None
        return Subject("command", hit or plain, status=status, unplaced=left if hit else (),
                       nth=nth)  # fmt: skip
    if _PROCESS.search(text):  # "pid of the *web* server": words that name nothing aside
        named = " ".join(w for w in (name or "").split() if w not in _FILLER)
        return Subject("process", named or None, reading=reading)
    if _WINDOW.search(text) or re.search(r"\b(was|were) i in\b", text):
        return Subject("window", name)
    said = _name(_LOOKING.sub(" ", text))
    seen = known.window_words(said or "")
    if not hit and reading is None and re.search(r"\b(looking at|look(?:ed)? at|viewing)\b", text):
        return Subject("window", seen or None)  # "what was I looking at?": the window in focus
    kinds = [w for w in (said or "").split() if app_kind(w)]
    if kinds and not hit and reading is None:  # "how often did I go to the browser?"
        named = " ".join([*kinds, *seen.split()])
        rest = tuple(w for w in unplaced(said, named, measure) if w not in _IN_A_TITLE)
        return Subject("window", named, unplaced=rest)  # "terminal *sessions*"
    if len(seen.split()) > len(hit.split()) and reading is not None:
        return Subject("process", seen, reading=reading)  # "how much cpu did firefox take?"
    if len(seen.split()) > len(hit.split()):  # "when was I reading Stack Overflow?"
        left = unplaced(said, seen, measure)  # a window's title names its file
        return Subject("window", seen, unplaced=tuple(w for w in left if w not in _IN_A_TITLE))
    use = _USE.search(text) if measure not in _OF_A_RUN else None
    if hit and use is not None:  # "how many cores did cpuhog use?", "how big did x get?"
        return Subject("process", hit, reading="cpu" if use[1] else "memory")
    if hit and (reading is None or measure in _OF_A_RUN):
        return Subject("command", hit, status=status, unplaced=left, nth=nth)
    if status is not None and reading is None:
        return Subject("command", None, status=status)  # "what failed?"
    if name and measure == "duration":
        return Subject("window", name)  # "how much time did I spend in firefox?"
    if reading is not None:
        busy = measure == "most" and reading in ("cpu", "memory")  # a process's measures
        thing = bool(set((name or "").split()) - _FILLER - _READING_FILLER) or busy
        return Subject("process" if thing else "reading", name, reading=reading)
    if name and measure == "running":
        return Subject("command", name)
    return None


_PID_OF = re.compile(r"\b(pids?|process ids?)\b")
"""Words asking for a process's id, which a command's run does not hold."""
_RUNNING_WORDS = frozenset(["jobs", "background", "tasks", "anymore", "open", "left"])
"""Words a question of what was running may hold that name no kind of thing."""
_STARTED = re.compile(r"\b(start(?:ed)?|launch\w*|kick\w* off|fire\w* up|spawn\w*)\b")
"""Words for starting something, which a person does by running a command."""
_OF_A_RUN = frozenset(["when", "running", "exit", "duration"])
"""Measures of a command's run, not of its process's use: "when did the cpu hog start?"."""


_DURING = re.compile(
    r"\b(?:(?<!\ba )while|during)\s+(?:i was running\s+|i ran\s+)?(.+?)"
    r"(?:\s+(?:was|were|is)\s+(?:still\s+)?(?:running|going|on|up)\b|\s+ran\b|\s+run\b|\s*(?:,|$))|"
    r"\bwhen\s+(?!(?:did|was|were|is|i|you|nerve|it)\b)(.+?)\s+(?:ran|was (?:running|going|on))\b|"
    r"\bwhen\s+i\s+(?:ran|was running)\s+(.+?)\s*(?:,|$)"
)
_SOME_TIME = Window(0, 0, "during", clock=True)
"""The window of a plan read "during X", until X's run is found (:mod:`.during`)."""


_AFTER_END = re.compile(
    r"\b(?:after|when|once)\s+(.+?)\s+(?:had\s+|was\s+)?(?:finished|ended|exited|stopped|done|"
    r"completed|quit|gone|killed|over)\b"
)
_BEFORE_START = re.compile(
    r"\bbefore\s+(.+?)\s+(?:was\s+|had\s+)?(?:started|began|begun|ran|launched|kicked off)\b"
)
_CAME_BACK = re.compile(
    r"\b(?:when|after|once)\s+(?:i\s+(?:(?:came|got|was)\s+back|returned)|(?:my|the|a)\s+break|"
    r"(?:being|i was)\s+(?:away|afk|gone|idle))\b"
)
_WENT_AWAY = re.compile(
    r"\b(?:just |right )?before\s+(?:i\s+(?:went|stepped|walked|got up|left)|going|stepping)"
    r"(?:\s+(?:away|idle|afk|from|out))?"
    r"(?:\s+(?:the|my)\s+(?:desk|computer|keyboard|machine))?\b|"
    r"\b(?:just |right )?before\s+(?:my|the)\s+(?:break|afk|time away)\b"
)


_WHILE_AWAY = re.compile(
    r"\b(?:while|when|whilst|during the time)\s+(?:i\s+)?(?:was|were|went)\s+(?:away|afk|gone|out|"
    r"idle|on (?:a |my )?break)\b|"
    r"\b(?:during|in|over|for)\s+(?:my|the)\s+(?:afk|away|idle)(?:\s+(?:time|spell|period|"
    r"stretch))?\b|\b(?:during|in|over)\s+(?:my|the)\s+break\b|"
    r"\b(?:while|when)\s+i\s+(?:was\s+)?(?:stepped|stepping)\s+away\b"
)
"""The time away named as a window ("while I was afk", "during my break")."""
_WHEN_LEFT = re.compile(
    r"\b(?:when|as)\s+i\s+(?:went\s+(?:away|afk|idle)|left(?:\s+(?:the|my)\s+(?:desk|computer|"
    r"keyboard|machine))?|stepped\s+away)\b"
)
"""The moment the time away began ("what was running when I went away?")."""


def _away_named(text: str) -> tuple[Subject, str] | None:
    """Time away named as the window: its whole spell ("while I was afk"), or its start ("when
    I went away"), and the text without the words that named it."""
    for pattern, name in ((_WHILE_AWAY, "while"), (_WHEN_LEFT, "left")):
        if match := pattern.search(text):
            return Subject("away", name), (text[: match.start()] + " " + text[match.end() :])
    return None


_CONTENT = re.compile(
    r"\bwhat (?:is|was) (?:in|inside) (?:the )?(?:file )?[\w./~-]+\.[a-z]\w*\b|"
    r"\b(?:contents?|stdout|stderr|diff|text) of\b|\boutput of\b|\b\w+ output$|"
    r"\bwhat (?:\w+ )?did (?!(?:the )?(?:browser|firefox|vim|window|screen|page|nerve|you)\b)"
    r"(?:\S+ ){1,4}(?:show|print|output|display|say)(?: me| us)?$|"
    r"\bwhat (?:is|was) (?:written|typed) in\b|\bwhat did i (?:chang|writ|typ|add|remov|delet)\w* "
    r"(?:in|to|from) (?:the )?(?:file )?[\w./~-]+\.[a-z]\w*\b|\bpast(?:e|ed|ing)\b|\bclipboard\b|"
    r"\b(?:which|what) (?:is |was |were )?(?:the )?lines?\b|"
    r"\blines? (?:i |did i )?(?:chang|add|remov|edit|wrot|typ)\w*\b"
)
"""Words asking for what a command printed or a file holds, which no sense records."""
_CONTENT_WORDS = frozenset(
    ["contents", "content", "stdout", "stderr", "diff", "text", "output", "show", "print",
     "display", "say", "line", "lines", "written", "pasted", "paste", "clipboard"]
)  # fmt: skip
"""Those of them said back as the part the log cannot answer."""


def _content(text: str, question: str, window: Window | None, known: Known) -> Plan | None:
    """A question for a command's output or a file's text ("what did cat README.md show?"):
    what it names, with the part the log cannot hold left unplaced (not answered)."""
    asked = _CONTENT.search(text)
    if asked is None:
        return None
    words = (_name(_CONTENT.sub(" ", text)) or "").split()
    plain = [w for w in (_name(text) or "").split() if w not in _CONTENT_WORDS | _FILLER]
    named = [w for w in known.file_words(plain) if "." in w]  # "what did I change in main.c?"
    thing = Subject("file", " ".join(named)) if named else _side(" ".join(words or plain), known)
    said = tuple(w for w in asked[0].split() if w in _CONTENT_WORDS) or ("what it holds",)
    return Plan(question, window, replace(thing or Subject("anything"), unplaced=said), "list")


def _during(text: str) -> tuple[Subject, str] | None:
    """A time named by something else, and the text without the words that named it: ``while
    X was running`` / ``during X`` / ``when X ran`` (X's run: a ``command`` subject), ``after
    X finished`` (just after its end: ``ended``), ``before X started`` (from the start of its
    day to its start: ``started``), ``when I came back`` (just after time away: ``away``)."""
    if (away := _away_named(text)) is not None:
        return away
    if match := _CAME_BACK.search(text):
        return Subject("away"), (text[: match.start()] + " " + text[match.end() :]).strip()
    if match := _WENT_AWAY.search(text):  # "just before I stepped away"
        return Subject("away", "before"), (text[: match.start()] + " " + text[match.end() :])
    kind, match = "command", _DURING.search(text)
    if match is None and (match := _AFTER_END.search(text)) is not None:
        kind = "ended"
    if match is None and (match := _BEFORE_START.search(text)) is not None:
        kind = "started"
    said = next((g for g in match.groups() if g), "") if match else ""
    words = re.sub(r"\b(the|my|a|an|that|this|those|these|last|first|final|time|again)\b", " ",
                   said)  # fmt: skip
    if match is None or not words.split():
        return None
    rest = (text[: match.start()] + " " + text[match.end() :]).strip()
    return Subject(kind, " ".join(words.split())), rest


_NICKNAME = re.compile(
    r"\b(?:the |that |this )?(?:(memory|ram|cpu|processor) )?(leak(?:y|ing|er)?|hog|grower|"
    r"eater|(?:memory|ram) (?:grower|eater))\b(?! (?:cpu|memory|ram))"
)
"""A process named by what it did: "the leak", "the memory grower" (the process with the most
memory at its peak), "the hog", "the cpu eater" (the most CPU)."""


def _nicknamed(text: str, known: Known) -> str:
    """The text with each process nickname replaced by that process's name, when the log
    names one ("the cpu hog or the memory leak": both)."""
    return _NICKNAME.sub(lambda match: _named(match, known), text)


def _named(match: re.Match[str], known: Known) -> str:
    """The name of the process a nickname means, with the reading it said ("the memory hog":
    its memory); the nickname as it was when the log names none."""
    said = f"{match[1] or ''} {match[2]}"
    name = known.heaviest(memory=re.search(r"memory|ram|leak|grow", said) is not None)
    if name is None:
        return match[0]
    return f"{match[1]} {name}" if match[1] else name


def _speller() -> Speller:
    """The parser's vocabulary: its word lists, and its patterns and the window's."""
    patterns = [v for v in globals().values() if isinstance(v, re.Pattern)]
    said = [re.compile(p) for _, p in (*_READINGS, *_MEASURES)]
    return Speller(_STOP | _FILLER | _READING_FILLER, [*patterns, *said, *TIME_WORDS])


_SPELLER = _speller()


def _names_something(word: str, known: Known) -> bool:
    """Whether ``word`` names a command, a changed file or a window the log holds."""
    return bool(known.command_words([word]) or known.file_words([word]) or
                known.window_words(word))  # fmt: skip


def mended(question: str, known: Known) -> str:
    """The question with its mistyped words read as the parser's own (:mod:`.spelling`); the
    question as it was when none is."""
    text = _clean(question)
    fixed = _SPELLER.mend(text, lambda word: _names_something(word, known))
    clipped = _SHORT.search(" ".join(question.lower().split())) is not None
    return question if fixed == text and not clipped else fixed


def window_of(question: str, now_ns: int, tz: tzinfo | None) -> Window | None:
    """The window the question names, if any (as :func:`parse` reads it)."""
    return find_window(_clean(question), now_ns, tz)[0]


def _in_named_time(
    question: str, named: tuple[Subject, str], now_ns: int, tz: tzinfo | None, known: Known
) -> Plan:
    """The plan of a question whose time is named by something else (:func:`_during`): the
    rest of it parsed as a question of its own, over that time."""
    said = re.sub(r"\belse\b", " ", named[1])  # "while yes ran, what *else* did I run?"
    inner = parse(said, now_ns=now_ns, tz=tz, known=known, during=_SOME_TIME)
    left = tuple(w for w in (_name(named[1]) or "").split() if w not in _FILLER)
    what = inner.subject if inner is not None else Subject("activity", unplaced=left)
    if what.reading == "cpu" and re.match(r"\s*what (?:was|were|is) (?:\w+ )?busy\b", said):
        what = Subject("process", reading="cpu")  # "what was busy while …?": which process
    how = inner.measure if inner is not None else "list"
    if named[0] == Subject("away") and how == "list" and what.kind in ("window", "command"):
        how = "first"  # "which window did I go to when I came back?": the first one
    return Plan(question, _SOME_TIME, what, how, during=named[0])


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
    known = known or Known()
    text = _SPELLER.mend(_clean(question), lambda word: _names_something(word, known))
    text = _nicknamed(text, known)
    window, rest = find_window(text, now_ns, tz) if during is None else (during, text)
    named = _during(rest) if window is None else None
    if named is not None:
        return _in_named_time(question, named, now_ns, tz, known)
    if _ATTENTION.search(rest):
        return _attention(rest, window, question)
    if _DAEMON.search(rest) and not _NAMED_PAGE.search(rest):
        return Plan(question, window, Subject("daemon"), "list")
    if _CHECKS.search(rest):  # "did any check fail on guide.md?": the workflow's verdicts
        on = " ".join(known.file_words((_name(rest) or "").split()))
        return Plan(question, window, Subject("check", on or None), "list")
    ordered = _content(rest, question, window, known) or _ordered(rest, question, window, known)
    if ordered is not None:  # a command's output asked for, or a question of order
        return ordered
    files = _file(rest, window, question, known)
    if files is not None:
        return files
    if port := _PORT.search(rest):
        number = next((g for g in port.groups() if g), None)
        held = Subject("port", number if number and number.isdigit() else None)
        return Plan(question, window, held, _measure(rest))
    if _DEFER.search(rest) and not _names_app((_name(rest) or "").split(), [], known):
        return None
    status, plain = _status(rest)
    measure = _measure(plain)
    if _AWAY.search(rest) and _reading(rest) is None and not _COMMAND.search(rest):
        return Plan(question, window, Subject("away"), measure)
    folder = _folder(rest, question, window, measure, known)
    if folder is not None:
        return folder
    doing = _DOING.search(rest) and not _COMMAND.search(rest) and _reading(rest) is None
    if doing and window is not None:
        return Plan(question, window, Subject("activity"), "list")
    subject = _thing(plain, measure, known, status)
    anyone = subject is None or (subject.kind in ("command", "process") and not subject.name
                                 and subject.pid is None)  # fmt: skip
    if _RUNNING.search(plain) and anyone:  # "what was running?"; "which *containers*" is not
        said = [w for w in (_name(plain) or "").split() if w not in _FILLER | _RUNNING_WORDS]
        left = tuple(w for w in said if not _names_something(w, known))
        return Plan(question, window, Subject("running", unplaced=left), "running")
    failing = subject is not None and subject.status == "failed" and not subject.name
    if failing and measure == "list" and _COMMAND.search(plain) and "fail" in rest and not during:
        return None  # "which commands failed today?": the period intent lists them
    if subject is None and _STARTED.search(plain) and not _HAPPENED.search(rest):
        subject = Subject("command")  # "what did I kick off?": the commands run
    if subject is None:
        if (_HAPPENED.search(rest) or _name(rest) is None) and window is not None:
            return Plan(question, window, Subject("anything"), "list")
        return None
    if subject.kind == "process" and subject.reading and measure in ("count", "list"):
        measure = "peak"  # "how many cores did it use?": its peak
    turned = _CHANGE.search(plain) if re.search(r"\b(when|what time)\b", plain) else None
    if subject.kind == "reading" and turned is not None:  # "when did CPU use drop?"
        return Plan(question, window, subject, "fell" if turned[1] else "rose")
    if subject.kind == "reading" and measure in ("duration", "running", "exit"):
        return Plan(question, window, replace(subject, unplaced=(_SAID_MEASURE[measure],)), measure)
    if subject.kind == "reading":
        window, measure = _of_a_reading(plain, window, measure, now_ns)
        measure = "peak" if subject.reading == "swap" and measure == "last" else measure
    return Plan(question, window, subject, measure)


_LOWEST = re.compile(r"\b(lowest|minimum|min|(?<!at )least|how low|bottom(?:ed)?)\b")


def _of_a_reading(
    plain: str, window: Window | None, measure: str, now_ns: int
) -> tuple[Window | None, str]:
    """The window and measure of a question about a reading: "when was it lowest?" asks for
    the lowest (and its time), "the first reading" for the log's start, "what was the highest
    load?" for the peak; with no window and no other measure, the latest."""
    if measure in ("when", "list", "average", "peak") and _LOWEST.search(plain):
        return window, "lowest"  # "min ram used and when", "when was the cpu least busy?"
    if measure == "first" and window is None:
        return edge_window("start", now_ns), "list"  # "the first load reading"
    if measure == "most":
        return window, "peak"
    overall = re.search(r"\b(average|mean|overall|typical|total|sum|in all|altogether)\b",
                        plain) is not None  # fmt: skip
    if window is None and measure not in ("peak", "when", "lowest") and not overall:
        return window, "last"  # (of swap: its peak, "did we swap?" asks whether any was used)
    return window, measure
