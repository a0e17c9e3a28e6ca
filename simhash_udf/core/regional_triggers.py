"""Which clauses of a Chinese text the regional chain (`normalise.REGIONAL_CHAIN`: `hk2s`,
`s2twp`, `tw2sp`, to a fixed point) can bring to something other than what OpenCC's `t2s`
alone makes of them: the triggers of `normalise`'s fast path.

`s2twp` segments its input with OpenCC's 49,000 Simplified-to-Traditional phrases and runs
at a few MB/s, `t2s` at over 100; on most clauses of real text the chain ends where `t2s`
ends (a mainland clause goes to Traditional and comes back unchanged). A clause can end
elsewhere only where an entry of the dictionaries the chain loads acts on it. So every
string of those dictionaries (keys and values), in the Simplified forms a clause holds after
`t2s` or character by character (`_simplified_forms`), is tried alone, and these become
triggers (`trigger_strings`, made into `Triggers` by `TriggerStrings.triggers`):

- `changed`: the chain's fixed point differs from the string (软体 -> 软件, 建立 -> 创建);
- `fragile`: Taiwan's phrases rewrite it (软件 -> 軟體) and it comes back alone, but in
  Taiwan's script without the phrase `tw2sp` reads it in Taiwan's sense (程序 -> 进程), which
  happens when a longer segment around it keeps the phrase from firing;
- `_meetings`: a word Taiwan's phrases rewrite, joined to the neighbour its Taiwan word meets
  in an entry of `tw2sp`'s dictionaries on the way back (信号 -> 訊號, and 視訊 is Taiwan's
  视频: 电视信号 -> 电视频号, so 视信号 is a trigger, 信号 alone is not).

The raw text is checked too (`Triggers.raw`): the strings `hk2s` converts otherwise than
`t2s` (Hong Kong variants such as 衞). A clause holding no trigger goes out as `t2s` made it;
the others go through the chain. This is a rule read off the dictionaries, not a proof:
tests/core/test_normalise.py checks the result equals the whole chain on every clause of
People's Daily, three real pages and their Taiwan and Hong Kong reprints.

Clauses end at punctuation no dictionary string holds (`Triggers.clause_end`): OpenCC's
entries never span one, so each clause converts on its own.

The dictionaries are read from the installed OpenCC package with its own `opencc_dict` tool
(ocd2 -> text) once per installation: `normalise.regional_triggers` keeps the strings in the
table cache (`core/table_cache.py`), and each process only builds the converter from them.
"""

from __future__ import annotations

import json
import re
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from simhash_udf.core.opencc_loader import converter

# Punctuation a clause may end with: NFKC's forms of Chinese punctuation (，；：！？（） ->
# ASCII), the ideographic full stop, quotes, brackets and whitespace. Those that appear in
# a dictionary string are dropped at load time (`clause_ends`).
_CLAUSE_PUNCTUATION = ",.;:!?()[]{}\"'“”‘’、。《》〈〉「」『』【】…—·\n\t "


# What `marking_converter` writes for a trigger: a private-use character.
MARK = "\ue000"


@dataclass(frozen=True)
class Triggers:
    """marking: an OpenCC converter, `t2s` and then `MARK` over each trigger
    (`marking_converter`); raw: matches a trigger in the text as written; clause_end:
    matches a clause-ending character; clause_split: zero-width, after each of them."""

    marking: Any
    raw: re.Pattern[str]
    clause_end: re.Pattern[str]
    clause_split: re.Pattern[str]


def _opencc_share() -> Path:
    import opencc

    return Path(opencc.__file__).parent / "clib" / "share" / "opencc"


def _dictionary_files(config: dict | list) -> list[str]:
    """The `file` of every dictionary an OpenCC configuration (parsed JSON) loads, nested groups included."""
    found: list[str] = []
    items = config.values() if isinstance(config, dict) else config
    if isinstance(config, dict) and isinstance(config.get("file"), str):
        found.append(config["file"])
    for item in items:
        if isinstance(item, (dict, list)):
            found += _dictionary_files(item)
    return found


def dictionary_entries(configs: tuple[str, ...]) -> dict[str, list[tuple[str, list[str]]]]:
    """Per dictionary file the configurations load: its (key, values) entries, in file order."""
    share = _opencc_share()
    tool = share.parents[1] / "bin" / "opencc_dict"
    files = sorted({f for c in configs for f in _config_dictionaries(c)})
    entries = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name in files:
            out = Path(tmp) / f"{name}.txt"
            subprocess.run([str(tool), "-i", str(share / name), "-o", str(out), "-f", "ocd2", "-t", "text"],
                           check=True, capture_output=True)
            lines = out.read_text(encoding="utf-8").splitlines()
            entries[name] = [(key, values.split(" ")) for key, values in (line.split("\t") for line in lines)]
    return entries


def _convert_each(config: str, strings: list[str]) -> list[str]:
    """OpenCC `config` applied to each string (one call: the strings joined by line breaks,
    which no dictionary entry holds)."""
    converted = converter(config).convert("\n".join(strings)).split("\n")
    assert len(converted) == len(strings)
    return converted


def _simplified_forms(strings: list[str], variants: dict[str, str], characters: dict[str, str]) -> list[str]:
    """Each string after `t2s`, as written and with the regional variant characters of the
    reverse variant tables put back first (著 -> 着: `s2twp` writes 着 as 著, so the
    Taiwan entry 著書 acts on a clause that holds 着书); and both character by character
    (`characters`: the first Simplified form of each Traditional character), which `t2s`'s
    own phrases skip: its entry 於坦 keeps 於, so 于坦 comes back as 於坦."""
    variant_table, character_table = str.maketrans(variants), str.maketrans(characters)
    plain = [s.translate(variant_table) for s in strings]
    by_character = [s.translate(character_table) for s in strings + plain]
    return sorted(set(_convert_each("t2s", strings + plain)) | set(by_character))


def _absolute_files(config: dict | list, share: Path) -> dict | list:
    """An OpenCC configuration (parsed JSON) with every dictionary `file` made absolute."""
    if isinstance(config, list):
        return [_absolute_files(item, share) for item in config]
    return {key: str(share / value) if key == "file" else _absolute_files(value, share) if isinstance(value, (dict, list)) else value
            for key, value in config.items()}


def marking_converter(words: set[str]) -> Any:
    """An OpenCC converter that does what `t2s` does and then writes `MARK` over each of
    `words` (one `MARK` a character: the text keeps its length), with a text dictionary of
    its own. OpenCC's longest-match scan finds every occurrence at C speed (a regular
    expression of a few thousand words, even shaped as a trie, ran under 1 MB/s in Python's `re`):
    a clause holds a word exactly when its converted form holds `MARK` (or held `MARK`
    itself, which only costs a needless pass through the chain)."""
    import opencc

    share = _opencc_share()
    config = _absolute_files(json.loads((share / "t2s.json").read_text(encoding="utf-8")), share)
    with tempfile.TemporaryDirectory() as tmp:
        marks = Path(tmp) / "marks.txt"
        marks.write_text("".join(f"{w}\t{MARK * len(w)}\n" for w in sorted(words)), encoding="utf-8")
        config["conversion_chain"].append({"dict": {"type": "text", "file": str(marks)}})
        (Path(tmp) / "marking.json").write_text(json.dumps(config), encoding="utf-8")
        return opencc.OpenCC(str(Path(tmp) / "marking.json"))  # the dictionaries are read here


def clause_ends(strings: list[str]) -> str:
    """The characters of `_CLAUSE_PUNCTUATION` that no dictionary string holds, as a character class."""
    held = set("".join(strings))
    return "[" + re.escape("".join(c for c in _CLAUSE_PUNCTUATION if c not in held)) + "]"


def _meetings(rewritten: dict[str, str], backward_keys: list[str], variants: dict[str, str]) -> set[str]:
    """Where a Taiwan word meets its neighbours on the way back. rewritten: mainland word ->
    the Taiwan word `s2twp` writes for it (信号 -> 訊號); backward_keys: the entries of the
    dictionaries `tw2sp` loads. For each entry that overlaps a Taiwan word and reaches past
    it (視訊 over 訊號), the mainland text that puts them side by side: the entry's outside
    part in its Simplified forms, or the mainland word whose Taiwan word ends (begins) with
    it, joined to the mainland word (视信号)."""
    by_char: dict[str, list[tuple[str, int]]] = {}
    for key in backward_keys:
        for i, char in enumerate(key):
            by_char.setdefault(char, []).append((key, i))
    ending: dict[str, set[str]] = {}
    starting: dict[str, set[str]] = {}
    for word, taiwan in rewritten.items():
        for j in range(1, len(taiwan) + 1):
            ending.setdefault(taiwan[-j:], set()).add(word)
            starting.setdefault(taiwan[:j], set()).add(word)
    meetings = set()
    for word, taiwan in rewritten.items():
        for position, char in enumerate(taiwan):
            for key, i in by_char.get(char, []):
                start = position - i  # where the entry starts, relative to the Taiwan word
                if start >= 0 and start + len(key) <= len(taiwan):
                    continue  # inside the word: the word alone comes back (not `changed`)
                if all(key[x] == taiwan[start + x] for x in range(len(key)) if 0 <= start + x < len(taiwan)):
                    meetings.add((key[:max(0, -start)], word, key[len(taiwan) - start:] if start + len(key) > len(taiwan) else ""))
    outside = sorted({part for before, _, after in meetings for part in (before, after) if part})
    simple = dict(zip(outside, _convert_each("t2s", outside)))
    variant_table = str.maketrans(variants)
    plain = dict(zip(outside, _convert_each("t2s", [part.translate(variant_table) for part in outside])))

    def forms(part: str, neighbours: dict[str, set[str]]) -> set[str]:
        return {simple[part], plain[part], *neighbours.get(part, ())} if part else {""}

    return {b + word + a for before, word, after in meetings for b in forms(before, ending) for a in forms(after, starting)}


def _config_dictionaries(config: str) -> list[str]:
    """The dictionary files OpenCC configuration `config` (`t2s`, `s2twp`, ...) loads."""
    return _dictionary_files(json.loads((_opencc_share() / f"{config}.json").read_text(encoding="utf-8")))


@dataclass(frozen=True)
class TriggerStrings:
    """What `Triggers` are made of, as plain values (kept between processes by
    `normalise.regional_triggers`). marked: the strings the marking converter marks;
    raw: those matched in the text as written; clause_end: a character class of the
    punctuation that ends a clause."""

    marked: list[str]
    raw: list[str]
    clause_end: str

    def triggers(self) -> Triggers:
        """The triggers these strings make (builds the marking converter: a fraction of a second)."""
        longest_first = sorted(self.raw, key=len, reverse=True)
        return Triggers(marking_converter(set(self.marked)), re.compile("|".join(map(re.escape, longest_first))),
                        re.compile(self.clause_end), re.compile(f"(?<={self.clause_end})"))


def trigger_strings(chain: tuple[str, ...], canonical: Callable[[str], str]) -> TriggerStrings:
    """The trigger strings of `chain` = `("hk2s", "s2twp", "tw2sp")` from the dictionaries of
    the installed OpenCC (2-3 s); canonical: the chain's fixed point of a text, computed piece
    by piece (`normalise.to_canonical_chinese` without the fast path)."""
    entries = dictionary_entries(chain)
    strings = sorted({s for table in entries.values() for key, values in table for s in (key, *values)})
    variants = {key: values[0] for name in ("TWVariantsRev.ocd2", "HKVariantsRev.ocd2")
                for key, values in entries.get(name, []) if len(key) == 1}
    characters = {key: values[0] for name in ("TSCharacters.ocd2", "TSCharactersExt.ocd2")
                  for key, values in entries.get(name, []) if len(key) == len(values[0]) == 1}
    forms = _simplified_forms(strings, variants, characters)
    changed = {f for f, c in zip(forms, canonical("\n".join(forms)).split("\n")) if f != c}
    # A word Taiwan's phrases rewrite (软件 -> 軟體) and that comes back alone changes a clause
    # only when a longer segment keeps the phrase from firing and `tw2sp` reads the word in
    # Taiwan's sense (程序 -> 進程: `fragile`), or when its Taiwan word meets a neighbour.
    taiwan_phrases, taiwan_script = _convert_each("s2twp", forms), _convert_each("s2tw", forms)
    rewritten = {f: p for f, p, s in zip(forms, taiwan_phrases, taiwan_script) if p != s and f not in changed}
    fragile = {f for f, back in zip(forms, _convert_each("tw2sp", taiwan_script)) if f in rewritten and back != f}
    backward_keys = [key for name in _config_dictionaries("tw2sp") for key, _ in entries[name] if len(key) > 1]
    meetings = _meetings({f: p for f, p in rewritten.items() if f not in fragile}, backward_keys, variants)
    raw = {s for s, h, t in zip(strings, _convert_each("hk2s", strings), _convert_each("t2s", strings)) if h != t}
    return TriggerStrings(sorted(changed | fragile | meetings), sorted(raw), clause_ends(strings))


def source_files() -> list[Path]:
    """The files the triggers are derived from: this module's source, and every dictionary
    and configuration of the installed OpenCC (a different OpenCC derives other triggers)."""
    share = _opencc_share()
    return [Path(__file__), *sorted(p for p in share.iterdir() if p.is_file())]
