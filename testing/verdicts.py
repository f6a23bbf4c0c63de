"""Typed verdicts of an accountant check: one per cell, and the report over a grid (frozen, with a JSON form).

A cell is (configuration, training steps, δ, the relation the accountant is claimed to answer for).
The accountant's ε is compared with tsdp's bracket for that relation
(:mod:`tsdp.testing.brackets`): attained (a lower bound on the true ε) ≤ sound (an upper bound):

* ``unsound``: below the attained ε. Provably wrong for the claimed relation: a concrete pair of
  neighbouring datasets (the construction's) exceeds it; the verdict carries the construction,
  its pair, both ε and the `tsdp audit` command that shows it through the real loop. Where the
  value is at or above tsdp's sound ε for another relation and nearer to it than to the claim's
  attained ε (``sound_under``: the accountant could have meant that relation), it is a relation
  mismatch (as claim C6: a one-window guarantee against an element that lies in k windows),
  not a broken accountant, and the message says so and names that relation's sound ε;
* ``sound``: at or above tsdp's sound ε (an upper bound: at the check's grid, or at the
  accountant's default grid, ten times finer, for a value between the two);
* ``between``: in the bracket; ``bracket_position`` = (reported - attained) / (sound - attained).
  Where tsdp knows no attained ε for the cell, a value below the sound ε is "between" too, judged
  on the sound side only (it cannot be shown unsound), and the message says so;
* ``unchecked``: tsdp has no number for the scheme (Poisson top level);
* ``declined``: the accountant declined the cell (it returned None or raised NotImplementedError,
  or tsdp's TheoremError): not judged.

A report passes when some cell was judged (unsound, between or sound) and none is unsound.
"""
from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from typing import Callable, Optional, Tuple

from tsdp.verify.json_data import json_data, with_note
from tsdp.verify.rounded import DIGITS, rounded_down, rounded_nearest, rounded_up

UNSOUND, SOUND, BETWEEN, UNCHECKED, DECLINED = "unsound", "sound", "between", "unchecked", "declined"
VERDICTS = (UNSOUND, BETWEEN, SOUND, UNCHECKED, DECLINED)
JUDGED = (UNSOUND, BETWEEN, SOUND)
"""The verdicts that judge the accountant's value (the others say why a cell was not judged)."""


def scheme_line(config: dict) -> str:
    """A configuration (``TrainingConfig.as_dict()``) in one short line: scheme, sizes, σ, augmentation.

    Args:
        config: A configuration's JSON form (``TrainingConfig.as_dict()``).

    Returns:
        The line.
    """
    aug = (f" σ_C={config['sigma_context']:g} σ_F={config['sigma_forecast']:g}"
           if config["sigma_context"] or config["sigma_forecast"] else "")
    return (f"{config['top']}/{config['bottom']} N={config['N']} L={config['L']} L_C={config['context_length']} "
            f"L_F={config['forecast_length']} Λ={config['batch_size']} λ={config['instances']} "
            f"σ={config['sigma']:g}{aug}")


NO_GUARANTEE = "no guarantee"
"""What a reported ε = ∞ means (an accountant's honest "no bound", e.g. tsdp's own where the catalogue has none)."""


def epsilon_text(x: Optional[float], rounding: Callable[[float, int], str] = rounded_nearest) -> str:
    """A reported or bracketing ε as the verdicts and the findings page print it: ``DIGITS`` significant digits
    by ``rounding`` (:mod:`tsdp.verify.rounded`: tsdp's sound ε rounded up, its attained ε rounded down, an
    accountant's reported ε to nearest), '-' when missing, or ∞ with what it means.

    Args:
        x: The ε (None: missing).
        rounding: ``rounded_up``, ``rounded_down`` or ``rounded_nearest``.

    Returns:
        The text.
    """
    if x is None:
        return "-"
    if math.isinf(x) and x > 0:
        return f"∞ ({NO_GUARANTEE})"
    return rounding(x, DIGITS)


def below_texts(reported: float, attained: float) -> Tuple[str, str]:
    """An unsound cell's reported ε (rounded up: the accountant's value is never understated) and attained ε (rounded
    down: a lower bound), at :data:`DIGITS` significant digits or as many more as make the first read below the
    second (it is below: the cell is unsound), so 'reports ε = a where an attack attains b' always reads a < b.

    Args:
        reported: The accountant's ε, below ``attained``.
        attained: tsdp's attained ε (a lower bound).

    Returns:
        (reported's text, attained's text).
    """
    for digits in range(DIGITS, 18):
        a, b = rounded_up(reported, digits), rounded_down(attained, digits)
        if float(a) < float(b):
            return a, b
    return repr(reported), repr(attained)


@dataclass(frozen=True)
class RelationBound:
    """tsdp's sound ε (an upper bound, by ``theorem``) for another ``relation`` (its short name) on the same cell.

    Attributes:
        relation: The other relation's short name (``window``, ``1-event``, ...).
        epsilon_sound: tsdp's sound ε for it, an upper bound.
        theorem: The bound that gives it (None without one).
    """

    relation: str
    epsilon_sound: float
    theorem: Optional[str]


@dataclass(frozen=True)
class Verdict:
    """One cell's verdict: the reported ε against tsdp's attained (lower) and sound (upper) ε.

    Attributes:
        verdict: "unsound", "between", "sound", "unchecked" or "declined".
        accountant: The accountant's name.
        config: The configuration as a dict (``TrainingConfig.as_dict``).
        steps: The cell's number of training steps.
        delta: The cell's δ.
        relation: The claimed relation (``record``, ``w``).
        relation_text: The claimed relation in words.
        epsilon_reported: The accountant's ε.
        epsilon_attained: tsdp's lower bound (None where missing).
        epsilon_sound: tsdp's upper bound (None where missing).
        theorem: The sound bound.
        construction: The attained construction.
        pair: The construction's pair in words.
        audit_command: The `tsdp audit` line (unsound cells, where the loop has the construction).
        ratio: Reported / attained.
        bracket_position: Where the reported ε lies between the attained (0) and the sound (1) ε.
        sound_under_bounds: Other relations whose sound ε the reported value meets and is nearer to than to the
            claim's attained ε (unsound cells only).
        claims: What the accountant says it answers for.
        note: Why a number is missing or a cell was not judged.
        output: What the accountant printed while answering this cell.
    """

    verdict: str
    accountant: str
    config: dict
    steps: int
    delta: float
    relation: dict
    relation_text: str
    epsilon_reported: Optional[float]
    epsilon_attained: Optional[float]
    epsilon_sound: Optional[float]
    theorem: Optional[str]
    construction: Optional[str]
    pair: Optional[str] = None
    audit_command: Optional[str] = None
    ratio: Optional[float] = None
    bracket_position: Optional[float] = None
    sound_under_bounds: Tuple[RelationBound, ...] = ()
    claims: Optional[str] = None
    note: Optional[str] = None
    output: str = ""

    @property
    def unsound(self) -> bool:
        return self.verdict == UNSOUND

    @property
    def sound_under(self) -> Tuple[str, ...]:
        """The names of the relations of ``sound_under_bounds``."""
        return tuple(b.relation for b in self.sound_under_bounds)

    @property
    def relation_mismatch(self) -> bool:
        """Unsound for the claimed relation but sound for another one it could have meant (``sound_under``)."""
        return self.unsound and bool(self.sound_under_bounds)

    @property
    def attack(self) -> str:
        """The attained side's attack in words: the construction, on its hidden-position epoch under shuffling (the
        known-position construction is not attained there)."""
        from tsdp.theorems.hidden_position import HIDDEN_POSITION_TOP

        hidden = self.config.get("top") in HIDDEN_POSITION_TOP
        return f"{self.construction} construction" + (", hidden-position epoch" if hidden else "")

    @property
    def evidence(self) -> str:
        """The bound behind the verdict, in a word: the attained construction (unsound), the sound theorem (sound,
        between), or '-'."""
        if self.verdict == UNSOUND:
            return f"{self.construction} attack"
        if self.verdict in (SOUND, BETWEEN) and self.theorem:
            return f"{self.theorem} bound"
        if self.verdict == BETWEEN and self.construction:
            return f"{self.construction} attack"
        return "-"

    def message(self) -> str:
        """The verdict in one paragraph with its evidence: for an unsound cell, the form 'accountant X reports ε = a
        where an attack attains b', the attack (construction, pair, scheme) and its `tsdp audit` command, and for a
        relation mismatch the other relation's sound ε and theorem; for a sound cell the sound ε and its theorem."""
        where = (f"{scheme_line(self.config)}, {self.steps} step(s), δ = {self.delta:g}, relation "
                 f"{self.relation_text}")
        if self.verdict == UNSOUND:
            head = "RELATION MISMATCH" if self.relation_mismatch else "UNSOUND"
            reported, attained = below_texts(self.epsilon_reported, self.epsilon_attained)
            text = (f"{head}: {self.accountant} reports ε = {reported} where an attack attains {attained} ({where}); "
                    f"attack: the {self.construction} construction, {self.pair}")
            text += (f"; demonstrate it through the loop: {self.audit_command}" if self.audit_command
                     else "; the loop has no construction for this configuration (its audit changes one element, "
                          "w = 1, of equally long series whose windows have a context, L_C ≥ 1)")
            if self.relation_mismatch:
                bounds = ", ".join(f"{b.relation} (tsdp's sound ε = {epsilon_text(b.epsilon_sound, rounded_up)}, {b.theorem})"
                                   for b in self.sound_under_bounds)
                text += (f". The value is at or above tsdp's sound ε under another relation, and nearer to it than to "
                         f"the attained ε: {bounds}: the accountant answers for a different neighbouring relation "
                         "than the one claimed (as claim C6), not a broken computation")
            if self.claims:
                text += f". The accountant claims: {self.claims}"
            return text
        if self.verdict == SOUND:
            return (f"sound: {self.accountant} reports ε = {epsilon_text(self.epsilon_reported)} ≥ tsdp's sound ε = "
                    f"{epsilon_text(self.epsilon_sound, rounded_up)} ({self.theorem}; {where})")
        if self.verdict == BETWEEN:
            if self.epsilon_attained is None:
                return (f"between: {self.accountant} reports ε = {epsilon_text(self.epsilon_reported)} below tsdp's sound ε = "
                        f"{epsilon_text(self.epsilon_sound, rounded_up)} ({self.theorem}); tsdp knows no attained ε here ({self.note}), so "
                        f"the value is judged on the sound side only and cannot be shown unsound ({where})")
            upper = ("no sound bound in the catalogue" if self.epsilon_sound is None
                     else f"sound {epsilon_text(self.epsilon_sound, rounded_up)} ({self.theorem})")
            where_in = ("" if self.bracket_position is None
                        else f", {self.bracket_position:.0%} of the way from the attained to the sound ε")
            return (f"between: {self.accountant} reports ε = {epsilon_text(self.epsilon_reported)} in tsdp's bracket "
                    f"[attained {epsilon_text(self.epsilon_attained, rounded_down)} ({self.attack}), {upper}]{where_in} "
                    f"({where})")
        if self.verdict == DECLINED:
            return f"declined: {self.accountant} declines this cell ({self.note}); not judged ({where})"
        return f"unchecked: {self.note} ({where})"

    def as_dict(self) -> dict:
        """The JSON form: the fields in order, with ``evidence``, ``attack`` and ``relation_mismatch`` as their own JSON."""
        d = asdict(self)
        d["sound_under"] = list(self.sound_under)
        d["evidence"] = self.evidence
        d["attack"] = self.attack
        d["relation_mismatch"] = self.relation_mismatch
        d["message"] = self.message()
        for key in ("epsilon_reported", "ratio"):
            with_note(d, key, f"null: the accountant reports ε = ∞ ({NO_GUARANTEE})")
        return d

    def to_json(self) -> str:
        """The verdict as RFC 8259 JSON (non-finite numbers as null, :func:`tsdp.verify.json_data.json_data`)."""
        return json.dumps(json_data(self.as_dict()), allow_nan=False)


@dataclass(frozen=True)
class CheckReport:
    """Every cell's verdict for one accountant.

    Attributes:
        accountant: The accountant's name.
        claims: What the accountant says it answers for.
        verdicts: One verdict per cell, in the grid's order.
        seconds: The check's wall time.
        counts: Cells per verdict, and ``relation_mismatch`` among the unsound (computed on construction).
    """

    accountant: str
    claims: Optional[str]
    verdicts: Tuple[Verdict, ...]
    seconds: float = 0.0
    counts: dict = field(default_factory=dict)

    def __post_init__(self):
        counts = {v: sum(1 for x in self.verdicts if x.verdict == v) for v in VERDICTS}
        counts["relation_mismatch"] = sum(1 for x in self.verdicts if x.relation_mismatch)
        object.__setattr__(self, "counts", counts)

    @property
    def unsound(self) -> Tuple[Verdict, ...]:
        return tuple(v for v in self.verdicts if v.unsound)

    @property
    def judged(self) -> int:
        """How many cells judged the accountant's value (unsound, between or sound)."""
        return sum(self.counts[v] for v in JUDGED)

    @property
    def passed(self) -> bool:
        """Some cell was judged and none is unsound for the claimed relation (a report of declined or unchecked
        cells only checked nothing, and does not pass)."""
        return self.judged > 0 and not self.unsound

    def worst(self, n: int = 3) -> Tuple[Verdict, ...]:
        """The ``n`` unsound cells with the largest attained / reported ratio.

        Args:
            n: How many cells at most.

        Returns:
            The unsound verdicts, worst first.
        """
        return tuple(sorted(self.unsound, key=lambda v: v.epsilon_attained / max(v.epsilon_reported, 1e-300),
                            reverse=True)[:n])

    def summary(self) -> str:
        """The counts in one line."""
        c = self.counts
        return (f"{c['unsound']} unsound ({c['relation_mismatch']} of them relation mismatches), {c['between']} between, "
                f"{c['sound']} sound, {c['unchecked']} unchecked, {c['declined']} declined of {len(self.verdicts)} cells "
                f"({self.seconds:.1f} s)")

    def table(self) -> str:
        """The verdict table, one line per cell with its evidence (the attack or the sound bound), the counts, the
        message of every cell that is unsound or was not fully judged, and what the accountant printed."""
        lines = [f"accountant {self.accountant}" + (f" (claims: {self.claims})" if self.claims else ""),
                 f"{'verdict':<10} {'reported':>10} {'attained':>10} {'sound':>10}  {'evidence':<10}  steps  relation  "
                 "configuration"]

        def num(x, rounding=rounded_nearest):
            return f"{epsilon_text(x, rounding):>10}"

        for v in self.verdicts:
            tag = "mismatch" if v.relation_mismatch else v.verdict
            at = f"  (bracket {v.bracket_position:.0%})" if v.bracket_position is not None else ""
            reported, attained = (below_texts(v.epsilon_reported, v.epsilon_attained) if v.unsound else
                                  (epsilon_text(v.epsilon_reported), epsilon_text(v.epsilon_attained, rounded_down)))
            lines.append(f"{tag:<10} {reported:>10} {attained:>10} {num(v.epsilon_sound, rounded_up)}  "
                         f"{v.evidence:<10}  {v.steps:>5}  {v.relation['record']}(w={v.relation['w']})  "
                         f"{scheme_line(v.config)}{at}")
        lines.append(self.summary())
        lines += [v.message() for v in self.verdicts
                  if v.verdict in (UNSOUND, UNCHECKED, DECLINED) or (v.verdict == BETWEEN and v.epsilon_attained is None)]
        for v in self.verdicts:
            if v.output:
                lines.append(f"the accountant printed at {scheme_line(v.config)}, {v.steps} step(s): "
                             f"{' | '.join(v.output.strip().splitlines())}")
        return "\n".join(lines)

    def as_dict(self) -> dict:
        """The JSON form: the accountant, the claims, passed, judged, the counts, the seconds and every verdict's JSON form."""
        return {"accountant": self.accountant, "claims": self.claims, "passed": self.passed, "judged": self.judged,
                "counts": self.counts, "seconds": self.seconds, "verdicts": [v.as_dict() for v in self.verdicts]}

    def to_json(self) -> str:
        """The report as RFC 8259 JSON (non-finite numbers as null, :func:`tsdp.verify.json_data.json_data`)."""
        return json.dumps(json_data(self.as_dict()), allow_nan=False)
