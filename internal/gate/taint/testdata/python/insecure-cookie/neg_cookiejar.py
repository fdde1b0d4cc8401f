import http.cookiejar

import requests


def jar_with(cookie: http.cookiejar.Cookie):
    s = requests.Session()
    s.cookies.set_cookie(cookie)
    return s
