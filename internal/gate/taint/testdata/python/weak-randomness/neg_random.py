import random
import secrets
import string


def make_reset_token():
    return "".join(secrets.choice(string.ascii_letters) for _ in range(32))


def jitter():
    delay = random.uniform(0.1, 0.5)
    return delay


def shuffle_cards(cards):
    random.shuffle(cards)
    key = secrets.token_hex(16)
    return cards, key
