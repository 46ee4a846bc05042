"""The words of a question, and what it asks for.

`terms` are the stemmed content words (the lexical score); `answer_types` are
the patterns a sentence holding the answer is expected to contain: a duration
for "how long", a figure for "how many", a date for "when", a person for "who",
a reason for "why", a definition for "what is …?", both alternatives for "…
symptoms or causes?".
"""

import functools
import re
import threading

import Stemmer

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_STOP_WORDS = frozenset(
    """a about above after again against all am an and any are as at be because been
    before being below between both but by can could did do does doing down during each
    few for from further had has have having he her here hers herself him himself his
    how i if in into is it its itself just me more most my myself no nor not now of off
    on once only or other our ours ourselves out over own same she should so some such
    than that the their theirs them themselves then there these they this those through
    to too under until up very was we were what when where which while who whom why will
    with would you your yours yourself yourselves give tell show find get""".split()
)
_stemmer = Stemmer.Stemmer("english")
_stemmer_lock = threading.Lock()


@functools.lru_cache(maxsize=20000)
def terms(text: str) -> frozenset[str]:
    """The stemmed content words of `text`."""
    words = [w.lower() for w in _WORD.findall(text)]
    with _stemmer_lock:  # PyStemmer objects are not thread-safe
        stems = _stemmer.stemWords([w for w in words if w not in _STOP_WORDS])
    return frozenset(stems)


# What a question asks for, and what a sentence must hold to give it.
_DURATION = re.compile(
    r"\d+(?:[.,]\d+)?\s*(?:(?:-|–|—|to)\s*\d+\s*)?"
    r"(?:seconds?|minutes?|mins?|hours?|hrs?|days?|weeks?|months?|years?)\b",
    re.I,
)
_FIGURE = re.compile(r"\d")
# A year not followed by "-23-51" or "–NM–035" (document numbers), a month and
# day, or d/m/y.
_DATE = re.compile(
    r"\b(?:1[5-9]|20)\d\d\b(?![–-]\w)|\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct"
    r"|nov|dec)[a-z]*\.? \d|\b\d{1,2}/\d{1,2}/\d{2,4}\b"
    # A month named in full ("at the end of March"; "May" is a verb too).
    r"|(?-i:\b(?:January|February|March|April|June|July|August|September"
    r"|October|November|December)\b)",
    re.I,
)
_PERSON = re.compile(r"\b[A-Z][a-z]+(?:\s+[A-Z]\.)*\s+[A-Z][a-z]+")
_REASON = re.compile(
    r"\bbecause\b|\breasons?\b|\bdue to\b|\bcaused? by\b|\bso that\b"
    r"|\bin order to\b|\bsince\b|\bresult|\bled to\b|\bleads? to\b"
    r"|\bmotivat|\bpurpose\b|\bto (?:ensure|prevent|avoid)\b",
    re.I,
)
_DEFINITION = re.compile(
    r"\b(?:is|are|was|were)\s+(?:a|an|the)\b|\bcalled\b|\bknown as\b"
    r"|\brefers? to\b|\bstands? for\b|\bdefined as\b|\bmeans\b|\bi\.e\.",
    re.I,
)
# "not only … but also" adds, it does not deny.
_NEGATION = re.compile(
    r"\b(?:no|not(?! only\b)|never|none|nobody|nothing|without|neither|nor"
    r"|ineffective|fail\w*)\b|n't\b",
    re.I,
)
_CONDITION = re.compile(
    _DATE.pattern + r"|\b(?:if|once|unless|whenever|until|as soon as)\b|(?<=\w )when\b",
    re.I,
)
# "When does/is/can …": a general present, not a past event.
_GENERAL = r"\s+(?:does|do|is|are|can|should|will|must)\b"
# "What is LCIS?", "What are the gists …?", "What does saturation measure?":
# a short question for a meaning; the group is the term.
_DEFINED = re.compile(
    r"^\s*what(?:'s| is| are)\s+((?:\S+\s*){1,5}?)\s*\?*\s*$"
    r"|^\s*what (?:does|do)\s+((?:\S+\s+){1,5}?)(?:mean|measure|represent"
    r"|stand for|indicate|describe|cover|check|contain|say|show)\s*\?*\s*$",
    re.I,
)
_ASKS = [
    (re.compile(r"\bhow long\b", re.I), _DURATION),
    (
        re.compile(
            r"\bhow (?:many|much|large|big|small|far|old|tall|high|wide|deep"
            r"|heavy|fast)\b|\bnumber of\b|\btotal\b|\bamount\b"
            r"|\bcost\b|\bprice\b|\brate\b|\bpercent",
            re.I,
        ),
        _FIGURE,
    ),
    (
        re.compile(
            rf"\bwhen\b(?!{_GENERAL})|\bwhat (?:year|date|day|time)\b"
            r"|\bwhich year\b|\bdeadline\b|\bdue\b",
            re.I,
        ),
        _DATE,
    ),
    # "When does the test pass?" asks for a condition as often as a date.
    (re.compile(rf"\bwhen\b(?={_GENERAL})", re.I), _CONDITION),
    (re.compile(r"\bwho(?:m|se)?\b", re.I), _PERSON),
    # "Which treatments did not work?": the answer says what failed.
    (re.compile(r"\b(?:not|never)\b|n't\b", re.I), _NEGATION),
    (re.compile(r"\bwhy\b", re.I), _REASON),
    (_DEFINED, _DEFINITION),
]
FIGURES = (_DURATION, _FIGURE, _DATE, _CONDITION)
DEFINITION = _DEFINITION
# Two capitalised words are weak evidence of a name.
_ASK_WEIGHT = {_PERSON: 0.5}


# Reference marks like "[11, 14, 39]" are no figures, nor are the numbers of
# tables, figures and sections ("see Table 2", "Fig. 3", "§5").
_REFERENCES = re.compile(
    r"\[[\d,;\s–-]+\]"
    r"|(?:\b(?:Tables?|Figures?|Figs?\.|Sections?|Sec\.|Chapters?|Appendix"
    r"|Eqs?\.|Equations?)\s+|§\s*)[A-Z]?\d+(?:[-–.]\d+)*"
)
_NUMBER_NEAR = 3  # words between a count and what it counts


def typed(
    text: str,
    expected: list[re.Pattern],
    wanted: set[str],
    counted: frozenset[str] = frozenset(),
) -> float:
    """How far `text` holds what the question asks for (0 to 1). A figure, a
    date, a condition, a name, a reason or a negation counts fully next to one
    of the question's words ("73 airplanes" for "how many airplanes", "The test
    passes if" for "when does the test pass?"), half anywhere else: a unit
    holding the asked-for kind of thing about something else ("If the reading
    system does not have a viewport") does not answer. For "how many X", a
    figure counts fully next to X, what is `counted` (not "75k words" for "how
    many summaries are in Multi-LexSum?")."""
    text = _REFERENCES.sub(" ", text)
    beside = counted or wanted
    found = 0.0
    for gives in expected:
        if gives is _FIGURE:
            words = text.split()
            near = False
            for index, word in enumerate(words):
                if _FIGURE.search(word):
                    window = words[
                        max(0, index - _NUMBER_NEAR) : index + 1 + _NUMBER_NEAR
                    ]
                    if terms(" ".join(window)) & beside:
                        near = True
                        break
            found += 1.0 if near else (0.5 if _FIGURE.search(text) else 0.0)
        elif gives is _DEFINITION:
            found += 1.0 if _defines(text, wanted) else 0.0
        elif is_choice(gives):
            found += 1.0 if gives.search(text) else 0.0
        else:
            matches = list(gives.finditer(text))
            if matches:
                weight = _ASK_WEIGHT.get(gives, 1.0)
                near = any(_next_to(text, match, wanted) for match in matches)
                found += weight if near else weight / 2
    return found / len(expected)


def _next_to(text: str, match: re.Match, wanted: set[str]) -> bool:
    """Whether one of the question's words is within _TERM_NEAR words of
    `match`: "comments on this proposed AD by September 21" gives the date of
    the comments, "…, dated July 20, 2020." in a list of bulletins another."""
    before = text[: match.start()].split()[-_TERM_NEAR:]
    after = text[match.end() :].split()[:_TERM_NEAR]
    return bool(terms(" ".join([*before, match.group(0), *after])) & wanted)


_TERM_NEAR = 6  # words between a term and the words that define it


def _defines(text: str, wanted: set[str]) -> bool:
    """Whether `text` defines one of the question's words: "is a", "known as",
    "refers to" next to it ("an unholy union known as an abomination"), not
    anywhere in a sentence about something else."""
    for match in _DEFINITION.finditer(text):
        before = text[: match.start()].split()[-_TERM_NEAR:]
        after = text[match.end() :].split()[:_TERM_NEAR]
        if terms(" ".join(before + after)) & wanted:
            return True
    return False


_CHOICE = re.compile(r"([^\W\d_]+)\s+or\s+([^\W\d_]+)\s*\??\s*$", re.I)


_CHOICE_MARK = "(?=.*"


def _choice(query: str) -> re.Pattern | None:
    """For a question ending in a choice ("… symptoms or causes?"), a pattern
    matching a sentence that names both alternatives: the one that tells them
    apart, not one about either alone."""
    match = _CHOICE.search(query)
    if match is None:
        return None
    stems = [next(iter(terms(word)), "") for word in match.groups()]
    if not all(stems) or stems[0] == stems[1]:
        return None
    return re.compile(
        "".join(rf"{_CHOICE_MARK}\b{re.escape(stem)})" for stem in stems),
        re.I | re.S,
    )


def is_choice(pattern: re.Pattern) -> bool:
    """Whether `pattern` is a choice's (both alternatives named)."""
    return pattern.pattern.startswith(_CHOICE_MARK)


_VERB = (
    r"(?:is|are|was|were|do|does|did|can|could|should|would|will|must|has|have"
    r"|had|may|might)\b"
)
# "Which judge was …", "What value types can …": the words naming what is
# asked for, between "which"/"what" and the verb.
_FOCUS = re.compile(
    r"^\s*(?:to |for |in |on |at |from |by )?(?:which|what)\s+"
    rf"((?:(?!{_VERB})\S+\s+){{1,4}}?){_VERB}",
    re.I,
)
# "How many summaries are …": what is counted.
_COUNTED = re.compile(
    rf"\bhow (?:many|much)\s+((?:(?!{_VERB})\S+\s+){{1,4}}?){_VERB}", re.I
)


def counted_terms(query: str) -> frozenset[str]:
    """The terms of what a "how many X …?" question counts."""
    match = _COUNTED.search(query)
    return terms(match.group(1)) if match else frozenset()


def focus_terms(query: str) -> frozenset[str]:
    """The terms of what a "which X …?" or "what X …?" question asks for: an
    answer names it ("Judge Susan J. Dlott" for "Which judge …?")."""
    match = _FOCUS.search(query)
    return terms(match.group(1)) if match else frozenset()


def defined_term(query: str) -> frozenset[str]:
    """The terms of what a question asks the meaning of ("saturation" in "What
    does saturation measure?"), none when it asks for no meaning."""
    match = _DEFINED.search(query)
    if match is None:
        return frozenset()
    return terms(match.group(1) or match.group(2) or "")


def names_date(query: str) -> bool:
    """Whether `query` names a date ("… on 1 August 2018?"): a question keyed
    by a date can be answered by a statement's or a ledger's row holding it."""
    return bool(_DATE.search(query))


def answer_types(query: str) -> list[re.Pattern]:
    """Patterns a sentence answering `query` is expected to contain."""
    found = [gives for asks, gives in _ASKS if asks.search(query)]
    choice = _choice(query)
    return [*found, choice] if choice is not None else found
