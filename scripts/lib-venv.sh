# Sourced by scripts/install, scripts/demo and scripts/test: what .venv holds.
# .venv/pollux-install records the hash of pyproject.toml and the extras of the last complete
# install. scripts/demo needs "dev"; scripts/test needs "dev,judge" (the judge tests and mypy's view
# of judge_worker/ need torch and transformers), so either command may run first: each installs what
# is missing and keeps what is there.
VENV_STAMP=.venv/pollux-install

venv_project_hash() {
  sha256sum pyproject.toml | cut -d' ' -f1
}

venv_stamp_write() {  # $1: the extras just installed, comma-separated
  printf '%s %s\n' "$(venv_project_hash)" "$1" >"$VENV_STAMP"
}

# venv_has EXTRA...: true when .venv is a complete install of this pyproject.toml with every EXTRA.
venv_has() {
  [ -x .venv/bin/python ] && [ -f "$VENV_STAMP" ] || return 1
  local hash extras
  read -r hash extras <"$VENV_STAMP"
  [ "$hash" = "$(venv_project_hash)" ] || return 1
  local want
  for want in "$@"; do
    [[ ",$extras," == *",$want,"* ]] || return 1
  done
}

