"""docs/accountant-findings.md is the rendering of docs/accountant-findings.json (no number typed by hand), and the
JSON's verdicts agree with the rule that made them."""
import json
from pathlib import Path

from tsdp.testing.findings import render

DOCS = Path(__file__).resolve().parents[2] / "docs"


def test_the_page_is_the_json_rendered():
    runs = json.loads((DOCS / "accountant-findings.json").read_text(encoding="utf-8"))
    assert (DOCS / "accountant-findings.md").read_text(encoding="utf-8") == render(runs)


def test_every_verdict_follows_from_its_numbers_and_tsdp_passes():
    runs = json.loads((DOCS / "accountant-findings.json").read_text(encoding="utf-8"))
    names = {r["report"]["accountant"] for r in runs}
    for kind in ("RDP", "PRV", "GDP"):
        for rate in ("Λ/N", "Λ/(N·T)"):
            assert f"Opacus {kind} at rate {rate}" in names
    assert {"dp-accounting Poisson PLD at rate Λ/N", "dp-accounting Poisson PLD at rate Λ/(N·T)"} <= names
    assert {r["relation"] for r in runs} == {"1-event", "2-user"}
    for run in runs:
        for v in run["report"]["verdicts"]:
            reported, attained, sound = v["epsilon_reported"], v["epsilon_attained"], v["epsilon_sound"]
            if v["verdict"] == "unsound":
                assert reported < attained
            elif v["verdict"] == "sound":
                assert reported >= sound
            else:
                assert v["verdict"] == "between" and (reported is None or reported >= attained)
        if run["report"]["accountant"].startswith("tsdp"):
            assert run["report"]["passed"] and run["report"]["counts"]["unsound"] == 0


def test_every_printed_attained_epsilon_is_rounded_down():
    """An attained ε is a lower bound: the page's 'an attack attains X' reads back as at most a computed attained ε,
    within one unit of its 4th significant digit, never above it."""
    import re

    runs = json.loads((DOCS / "accountant-findings.json").read_text(encoding="utf-8"))
    attained = [v["epsilon_attained"] for run in runs for v in run["report"]["verdicts"]
                if v["verdict"] == "unsound"]
    printed = re.findall(r"an attack attains (\S+) \(", render(runs))
    assert printed
    for text in printed:
        assert any(float(text) <= a < float(text) * (1 + 1e-3) for a in attained), text
