"""The HTTP side of WHIP and WHEP for the tests' aiortc peers (whip_publisher.py,
whep_client.py): one request, an SDP body sent as application/sdp, a bearer token."""

import urllib.error
import urllib.request


def http(method, url, body=None, token=None):
    """Sends `body` (an SDP, or None) with `method` to `url`: (status, headers, body text),
    a 4xx or 5xx answered as any other status."""
    headers = {"Content-Type": "application/sdp"} if body is not None else {}
    if token:
        headers["Authorization"] = "Bearer " + token
    request = urllib.request.Request(url, data=body.encode() if body is not None else None, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, dict(response.headers), response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read().decode()
