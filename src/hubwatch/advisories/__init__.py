"""Advisories through OSV: known vulnerabilities of what a revision depends on, and our own
changes published as OSV records.

service.py (AdvisoryService) · osv.py (OsvService, the OSV.dev API) · offline.py
(OfflineOsvService, OSV's published database) · deps.py (what a revision depends on) ·
matching.py / records.py / cvss.py · attach.py (per revision, and re-checks) · changes.py
(`advisories.changed`) · publish.py (`x_HUBWATCH-…` records).
"""
