"""A webhook POST sent to the addresses the URL check approved, with no DNS lookup of its own."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import httpx2

from hubwatch.notify.urls import IpAddress


def post_pinned(
    client: httpx2.Client,
    url: str,
    addresses: Sequence[IpAddress],
    content: bytes,
    headers: Mapping[str, str],
) -> httpx2.Response:
    """POST to `url` over a connection to one of `addresses`, tried in order.

    The URL's host still names the server: it is the Host header, the TLS SNI name and the name
    the certificate is verified against. Only a failed connect moves on to the next address (the
    request was not sent); redirects are never followed, whatever the client's default.
    """
    if not addresses:
        raise ValueError("post_pinned needs at least one address")
    # A second lookup when connecting could answer differently from the check (DNS rebinding),
    # so the request goes to an IP URL and the name travels in Host and in httpcore's
    # "sni_hostname" extension, which is both SNI and the name ssl checks the certificate for.
    target = httpx2.URL(url)
    sent = {**headers, "host": target.netloc.decode("ascii")}
    if target.scheme == "https":
        # The pool keys connections by (scheme, IP, port): a kept-alive connection verified for
        # one name would carry the next request for another name hosted on the same IP.
        sent["connection"] = "close"
    extensions = {"sni_hostname": target.raw_host.decode("ascii")}

    def post(address: IpAddress) -> httpx2.Response:
        return client.post(
            target.copy_with(host=str(address)),
            content=content,
            headers=sent,
            extensions=extensions,
            follow_redirects=False,
        )

    *others, last = addresses
    for address in others:
        try:
            return post(address)
        except (httpx2.ConnectError, httpx2.ConnectTimeout):
            continue  # nothing was sent: the next address may answer
    return post(last)
