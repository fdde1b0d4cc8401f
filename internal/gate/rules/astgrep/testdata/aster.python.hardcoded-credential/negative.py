import os

DB_PASSWORD = os.environ["DB_PASSWORD"]
SECRET_KEY = "dev"
PASSWORD_FIELD = "password123456"
api_key = "your-api-key-here"
password = "changeme-please"
token_key = "x"
AUTH_TOKEN = "{{ auth_token }}"


def connect(user, password):
    return dict(user=user, password=password)


EXAMPLE = {"password": "<password>", "api_key": ""}
