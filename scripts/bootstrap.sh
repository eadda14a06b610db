# Sourced by scripts/test and scripts/run-sample: system packages, then ./.venv with the package.
#   EXTRAS=dev . scripts/bootstrap.sh
#   EXTRAS=dev,rl . scripts/bootstrap.sh      # also TRL, verifiers and the CPU build of torch
# Works on a fresh Debian machine (as root it installs bubblewrap and python3-venv with apt).

say() { printf '[%s] %s\n' "$(basename "$0")" "$*" >&2; }

need=()
command -v bwrap >/dev/null 2>&1 || need+=(bubblewrap)
# Debian's python3.11 + venv build the sandbox's Python environment (the same one the Docker image has).
/usr/bin/python3 -c 'import ensurepip, venv' >/dev/null 2>&1 || need+=(python3-venv)
command -v timeout >/dev/null 2>&1 || need+=(coreutils)
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    say "installing ${need[*]}"
    DEBIAN_FRONTEND=noninteractive apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
  else
    say "missing system packages: ${need[*]} (install them with your package manager)"
  fi
fi

if [ ! -x .venv/bin/python ]; then
  say "creating .venv"
  "${PYTHON:-python3}" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip
case ",${EXTRAS:-}," in
  *,rl,*)
    # torch first, at the version whose CPU build this kind of machine's wheel store holds
    # (pip's find-links), so TRL's requirement does not pull a newer torch, with its gigabytes
    # of CUDA libraries, from PyPI. tests/rl and CPU training need no more.
    .venv/bin/python -m pip install -q "torch==${TORCH_VERSION:-2.13.0}" ;;
esac
.venv/bin/python -m pip install -q -e ".${EXTRAS:+[$EXTRAS]}"
# The locked Python environment programs run in under bwrap (built once, under the cache dir).
.venv/bin/smoldataenvs sandbox setup
