#!/bin/sh
# Oracle: count failures per IP, then collect accepted logins from the noisy IPs.
set -eu
python3 - <<'PY'
import ipaddress, json, re
failed_re = re.compile(r"Failed password for (?:invalid user )?(\S+) from (\S+) port")
accepted_re = re.compile(r"Accepted password for (\S+) from (\S+) port")
failures, accepted = {}, []
with open("/root/auth.log") as f:
    for line in f:
        if m := failed_re.search(line):
            failures[m.group(2)] = failures.get(m.group(2), 0) + 1
        elif m := accepted_re.search(line):
            accepted.append((m.group(1), m.group(2)))
noisy = sorted((ip for ip, n in failures.items() if n >= 5), key=ipaddress.ip_address)
report = {
    "brute_force_ips": noisy,
    "failed_attempts": {ip: failures[ip] for ip in noisy},
    "compromised_accounts": sorted({user for user, ip in accepted if ip in noisy}),
}
with open("/root/report.json", "w") as f:
    json.dump(report, f, indent=2)
PY
