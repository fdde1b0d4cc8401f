#!/bin/sh
DB_PASSWORD="${DB_PASSWORD:?set DB_PASSWORD}"
API_KEY="$(cat /run/secrets/api_key)"
PASSWORD=""
PWD_BEFORE=/tmp/somewhere
SECRET_KEY=changeme123
