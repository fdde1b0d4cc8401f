#!/bin/sh
# make-repo.sh DIR creates Aster's built-in example repository in DIR (a new
# directory, or one this script made before, which is made again): a base commit on main, and a branch "feature" whose head
# commit adds a hard-coded credential, a shell injection in a .sh script and a
# Python subprocess call with shell=True. A nested .git cannot be committed,
# so the repository is made at run time. Then: aster review DIR
#
# The credential is a made-up token, assembled here so that this script itself
# holds no literal that secret scanners would flag.
set -eu
dir="${1:?usage: $0 DIR}"
if [ -e "$dir" ]; then
	# A repository this script made before is made again; anything else is left alone.
	if [ -d "$dir/.git" ] && [ "$(git -C "$dir" config user.email 2>/dev/null)" = "demo@example.invalid" ]; then
		rm -rf "$dir"
	else
		echo "make-repo: $dir already exists and is not a demo repository this script made; choose another DIR" >&2
		exit 2
	fi
fi
mkdir -p "$dir"
cd "$dir"
git init -q -b main .
git config user.name "Aster Demo"
git config user.email "demo@example.invalid"
git config commit.gpgsign false
# No background gc after a commit: tests remove the directory right after.
git config gc.auto 0
git config maintenance.auto false

# --- base: a small, clean service -----------------------------------------
mkdir -p app scripts
cat >app/__init__.py <<'PY'
PY
cat >app/jobs.py <<'PY'
"""Run maintenance jobs for the inventory service."""
import shlex
import subprocess


def archive(path):
    """Compress one directory into path.tar.gz."""
    return subprocess.run(["tar", "czf", path + ".tar.gz", path], check=True)


def describe(job):
    return "job " + shlex.quote(job)
PY
cat >app/settings.py <<'PY'
"""Settings come from the environment; nothing secret lives in the code."""
import os

DATABASE_URL = os.environ.get("DATABASE_URL", "sqlite:///inventory.db")
PY
cat >scripts/deploy.sh <<'SH'
#!/bin/sh
# Deploy the service to the directory given as the first argument.
set -eu
target="$1"
mkdir -p "$target"
cp -r app "$target/"
echo "deployed to $target"
SH
chmod +x scripts/deploy.sh
cat >.aster.yml <<'YML'
# Aster's configuration, read from the base revision of every change.
fail_on: error
filter_mode: added
paths:
  ignore: ["vendor/"]
instructions: |
  This service runs on shared hosts: flag anything that runs shell commands
  built from input, and any credential in the code.
YML
git add -A
git commit -q -m "inventory service: jobs, settings, deploy script"

# --- head: the change under review ------------------------------------------
git checkout -q -b feature
token="ghp_""R8bN2xQ7vT4mK9pL3sD6fH1jW5yZ0cA2eG4i"
cat >app/settings.py <<PY
"""Settings come from the environment; nothing secret lives in the code."""
import os

DATABASE_URL = os.environ.get("DATABASE_URL", "sqlite:///inventory.db")
# Token for the release bot (temporary, until the vault is set up).
GITHUB_TOKEN = "$token"
PY
cat >app/jobs.py <<'PY'
"""Run maintenance jobs for the inventory service."""
import shlex
import subprocess


def archive(path):
    """Compress one directory into path.tar.gz."""
    return subprocess.run(["tar", "czf", path + ".tar.gz", path], check=True)


def cleanup(pattern):
    """Delete old exports matching a pattern from the request."""
    return subprocess.run("rm -rf /srv/exports/" + pattern, shell=True, check=False)


def describe(job):
    return "job " + shlex.quote(job)
PY
cat >scripts/deploy.sh <<'SH'
#!/bin/sh
# Deploy the service to the directory given as the first argument.
set -eu
target="$1"
mkdir -p "$target"
cp -r app "$target/"
# Run the post-deploy hook named by the caller.
hook=$2
eval sh "$target"/hooks/$hook
rm -rf $target/tmp
echo "deployed to $target"
SH
# A change to .aster.yml in the head is reported and ignored.
cat >.aster.yml <<'YML'
fail_on: never
analyzers:
  gitleaks:
    enabled: false
YML
git add -A
git commit -q -m "cleanup job, deploy hooks, release token"
echo "make-repo: created $dir (base: main, head: feature)"
