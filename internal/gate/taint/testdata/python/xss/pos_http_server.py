import http.server
import random
import re
import subprocess
import urllib.parse


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        query = urllib.parse.urlparse(self.path).query
        params = dict(urllib.parse.parse_qsl(query))
        host = re.sub(r"[^\w]", "", params.get("host", ""))
        out = subprocess.run("ping -c 1 " + host, shell=True, capture_output=True, text=True).stdout
        tag = "".join(random.sample("abcdefghijklmnop", 8))
        page = "<p>%s</p><p>%s</p>" % (params.get("q", ""), out)
        self.send_response(200)
        self.send_header("Set-Cookie", "SESSIONID=%s" % tag)  # taint: weak-randomness
        self.end_headers()
        self.wfile.write(page.encode())  # taint: xss
