"""Importing this makes urllib.request.urlopen present the bearer token a
test's server requires: $CW_TOKEN when set (auth_shared in auth.sh), else the
token file the server generated ($HOME/.causeway/token)."""
import os
import urllib.request


def token():
    t = os.environ.get("CW_TOKEN")
    if t:
        return t
    with open(os.path.expanduser("~/.causeway/token")) as f:
        return f.read().strip()


_opener = urllib.request.build_opener()
_opener.addheaders = [("Authorization", "Bearer " + token())]
urllib.request.install_opener(_opener)
