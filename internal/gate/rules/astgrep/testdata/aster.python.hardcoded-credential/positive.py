import psycopg2

# ruleid: aster.python.hardcoded-credential
DB_PASSWORD = "h7Gq2vLx9Rk"


def connect():
    # ruleid: aster.python.hardcoded-credential
    return psycopg2.connect(host="db", user="app", password="Zr8!kQ2pLw")


class Settings:
    def __init__(self):
        # ruleid: aster.python.hardcoded-credential
        self.api_key = "AKd93jfLq0wZ"


CONFIG = {
    # ruleid: aster.python.hardcoded-credential
    "client_secret": "9fk2LmQp7xVb",
}
