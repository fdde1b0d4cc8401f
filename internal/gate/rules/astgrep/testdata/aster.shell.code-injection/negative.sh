#!/bin/bash
eval "$(ssh-agent -s)"
eval "$(pyenv init -)"
cmd="ls -l"
eval "$cmd"
run() {
    "$@"
}
echo "$1"
eval "$(printf 'export A=%s' "$x")"
eval "set -- $(getopt -o ab -- "$@")"
