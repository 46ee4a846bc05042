"""Reads the conformance suites' `-o` folders and prints the figures.

    python -m mcp_endpoint.tests.conformance_report OUT_DIR

OUT_DIR holds `0.1.16/` and `0.2.0-alpha.12/` as written by scripts/conformance.sh.
Exit status 0 when 0.1.16 fails exactly the baseline scenarios and every check of
the 2026-07-28 scenarios Quire must pass succeeds in 0.2.0-alpha.12.
"""

import json
import re
import sys
from collections import Counter
from pathlib import Path

BASELINE = Path(__file__).with_name("conformance-baseline.yml")
# The 2026-07-28 scenarios whose every check must pass (issue 4).
REQUIRED_MODERN = (
    "server-stateless",
    "http-header-validation",
    "http-custom-header-server-validation",
    "caching",
    "sep-2164-resource-not-found",
)
BAD = ("FAILURE", "WARNING")
_FOLDER = re.compile(r"^server-(?P<scenario>.+)-\d{4}-\d{2}-\d{2}T[\d-]+Z$")


def baseline_scenarios() -> set[str]:
    return {
        line.strip().removeprefix("- ").split("#")[0].strip()
        for line in BASELINE.read_text().splitlines()
        if line.strip().startswith("- ")
    }


def read_suite(folder: Path) -> dict[str, list[dict]]:
    """Checks per scenario."""
    scenarios: dict[str, list[dict]] = {}
    for checks in sorted(folder.glob("*/checks.json")):
        match = _FOLDER.match(checks.parent.name)
        if match:
            scenarios[match["scenario"]] = json.loads(checks.read_text())
    return scenarios


def failing(scenarios: dict[str, list[dict]]) -> dict[str, list[dict]]:
    return {
        name: [c for c in checks if c["status"] in BAD]
        for name, checks in scenarios.items()
        if any(c["status"] in BAD for c in checks)
    }


def summarise(out: Path) -> dict:
    legacy = read_suite(out / "0.1.16")
    modern = read_suite(out / "0.2.0-alpha.12")
    counts = {
        "0.1.16": Counter(c["status"] for cs in legacy.values() for c in cs),
        "0.2.0-alpha.12": Counter(c["status"] for cs in modern.values() for c in cs),
    }
    required = {name: modern.get(name, []) for name in REQUIRED_MODERN}
    return {
        "counts": counts,
        "legacy_scenarios": len(legacy),
        "legacy_failing": failing(legacy),
        "modern_scenarios": len(modern),
        "modern_failing": failing(modern),
        "required": required,
        "legacy_ok": bool(legacy) and set(failing(legacy)) == baseline_scenarios(),
        "required_ok": all(
            checks
            and any(c["status"] == "SUCCESS" for c in checks)
            and not any(c["status"] in BAD for c in checks)
            for checks in required.values()
        ),
    }


def main(out: Path) -> int:
    summary = summarise(out)
    for suite, counts in summary["counts"].items():
        figures = ", ".join(
            f"{n} {status.lower()}" for status, n in sorted(counts.items())
        )
        print(f"{suite}: {figures}")
    passing = summary["legacy_scenarios"] - len(summary["legacy_failing"])
    print(
        f"0.1.16 scenarios: {passing}/{summary['legacy_scenarios']} pass; failing: "
        f"{', '.join(sorted(summary['legacy_failing']))} "
        f"({'= baseline' if summary['legacy_ok'] else 'DIFFERS FROM BASELINE'})"
    )
    for name, checks in summary["required"].items():
        statuses = Counter(c["status"] for c in checks)
        print(f"2026-07-28 required {name}: {dict(statuses)}")
    print("0.2.0-alpha.12 failing scenarios (failed checks):")
    for name, checks in sorted(summary["modern_failing"].items()):
        first = (checks[0].get("errorMessage") or "")[:140]
        print(f"  {name}: {len(checks)} - {first}")
    ok = summary["legacy_ok"] and summary["required_ok"]
    print("RESULT:", "ok" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
