"""Partial credit: one third of the reward per correct key of /root/report.json."""

import json

EXPECTED = {
    "brute_force_ips": ["192.0.2.44", "192.0.2.200", "203.0.113.7"],
    "failed_attempts": {"192.0.2.44": 6, "192.0.2.200": 5, "203.0.113.7": 8},
    "compromised_accounts": ["deploy", "root"],
}


def grade():
    try:
        with open("/root/report.json") as f:
            report = json.load(f)
    except (OSError, ValueError) as exc:
        return {key: False for key in EXPECTED}, f"cannot read /root/report.json: {exc}"
    if not isinstance(report, dict):
        return {key: False for key in EXPECTED}, "report.json is not a JSON object"
    checks = {}
    for key, want in EXPECTED.items():
        got = report.get(key)
        if key == "failed_attempts":
            # Counts must be exact integers (true/1.0 are not counts).
            checks[key] = (
                isinstance(got, dict)
                and got == want
                and all(type(v) is int for v in got.values())
            )
        else:
            checks[key] = got == want
    return checks, None


checks, error = grade()
reward = round(sum(checks.values()) / len(checks), 4)
# reward.json is a map of numbers (Harbor and BenchFlow read it so): one 0/1 per check beside the
# reward; the why goes to the verifier's output.
result = {"reward": reward, **{f"check_{key}": float(ok) for key, ok in checks.items()}}
with open("/logs/verifier/reward.json", "w") as f:
    json.dump(result, f)
print(json.dumps({"reward": reward, "checks": checks, "error": error}))
