#!/bin/bash
eval "$(ssh-agent -s)"
eval "$(pyenv init -)"
cmd="ls -l"
eval "$cmd"
run() {
    "$@"
}
echo "$1"
