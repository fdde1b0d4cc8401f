#!/bin/sh
# ruleid: aster.shell.hardcoded-credential
DB_PASSWORD="h7Gq2vLx9Rk"
# ruleid: aster.shell.hardcoded-credential
export API_KEY=AKd93jfLq0wZ
deploy() {
    # ruleid: aster.shell.hardcoded-credential
    local client_secret='9fk2LmQp7xVb'
    echo "$client_secret" >/dev/null
}
