"""hubwatch's settings: one pydantic Settings object, read from HUBWATCH_* (and HF_*) variables."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Literal
from urllib.parse import unquote, urlsplit

from pydantic import AliasChoices, Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

from hubwatch.locations import ENV_FILE, default_data_dir, sqlite_url

MiB = 1024 * 1024


class AdvisoryServiceKind(StrEnum):
    """Where known advisories come from; `runtime.advisory_service` builds the service of each."""

    OFFLINE = "offline"
    """The local OSV database (`hubwatch osv sync` downloads it)."""
    OSV = "osv"
    """The OSV.dev API."""
    OFF = "off"
    """Nowhere: revisions are not checked for advisories."""


class Settings(BaseSettings):
    """All settings; every field is documented in docs/settings.md."""

    model_config = SettingsConfigDict(
        env_prefix="HUBWATCH_", env_file=ENV_FILE, extra="ignore", use_attribute_docstrings=True
    )

    data_dir: Path = Field(default_factory=default_data_dir)
    """Where the SQLite database and git mirrors live."""
    database_url: SecretStr | None = None
    """SQLAlchemy URL; default sqlite in data_dir. Postgres: postgresql+psycopg://user@host/db."""
    hf_endpoint: str = Field(
        default="https://huggingface.co",
        validation_alias=AliasChoices("HUBWATCH_HF_ENDPOINT", "HF_ENDPOINT"),
    )
    """Base URL of the Hub (or a mirror)."""
    hf_token: SecretStr | None = Field(
        default=None, validation_alias=AliasChoices("HUBWATCH_HF_TOKEN", "HF_TOKEN")
    )
    """Hub token for private and gated repos. Never logged."""
    max_file_bytes: int = Field(default=32 * MiB, gt=0)
    """Files larger than this are recorded as over the cap and not read."""
    max_header_bytes: int = Field(default=100 * MiB, gt=0)
    """safetensors headers claiming more than this, and GGUF headers needing more, are recorded
    as over the cap and not read."""
    diff_budget_s: float = Field(default=120.0, gt=0)
    """Seconds all differs of one revision may take together; those left are not run, and a
    `diff.budget` change says which."""
    max_revision_bytes: int = Field(default=512 * MiB, gt=0)
    """All the contents and headers one revision reads together, each blob counted once; files
    past it are recorded as over the cap and not read."""
    max_compare_bytes: int = Field(default=256 * MiB, gt=0)
    """A weight file kept in a git mirror (not LFS, not Xet) that changed is read whole, both
    sides, to compare its tensors' bytes, up to this size; a larger one is too large to compare."""
    template_budget_s: float = Field(default=15.0, gt=0)
    """Seconds all chat templates of one revision may render for together; the rest are not
    rendered (each template also stops after 10 s). The templates embedded in GGUF files get a
    budget of this size of their own."""
    poll_interval_s: float = Field(default=300.0, gt=0)
    """Seconds between two discovery cycles (the walk down the Hub's listing) of `hubwatch
    worker`, `serve` and `poll`, and between two checks of a repo the listing cannot vouch for.
    A change is recorded at worst about this long after its push, plus its poll: the default
    keeps that under 10 minutes (docs/scale.md)."""
    http_timeout_s: float = Field(default=30.0, gt=0)
    """Timeout of one HTTP request to the Hub."""
    retries: int = Field(default=5, ge=0)
    """How often a transient source error (429, 5xx, timeout) is retried before giving up."""
    retry_max_wait_s: float = Field(default=60.0, gt=0)
    """Longest single wait between retries (Retry-After is honoured up to this)."""
    degraded_after: int = Field(default=3, ge=1)
    """A repo whose polls fail this many times in a row is marked degraded until one succeeds."""
    git_credentials: dict[str, SecretStr] = Field(default_factory=dict)
    """Credentials of git hosts, a JSON object `{"host": "user:token"}`: sent to that host only,
    never stored with a tracked URL or shown. Never logged."""
    git_timeout_s: float = Field(default=600.0, gt=0)
    """Timeout of one git command (clone and fetch of large mirrors take a while)."""
    advisory_service: AdvisoryServiceKind = AdvisoryServiceKind.OFFLINE
    """Where known advisories come from: the local OSV database, the OSV.dev API, or nowhere."""
    osv_dir: Path | None = None
    """The local OSV database (`<dir>/PyPI/all.zip`); default `<data_dir>/osv`."""
    osv_api_url: str = "https://api.osv.dev"
    """Base URL of the OSV.dev API (or a server speaking it)."""
    osv_database_url: str = "https://osv-vulnerabilities.storage.googleapis.com"
    """Where `hubwatch osv sync` downloads `<ecosystem>/all.zip` from."""
    osv_max_age_days: float = Field(default=7.0, ge=0)
    """A local OSV database whose files are older than this is an error (advisories `degraded`,
    never "none"); 0: no limit."""
    poll_jitter: float = Field(default=0.1, ge=0, lt=1)
    """Each repo's own check is due every poll interval, give or take this fraction."""
    verify_interval_s: float = Field(default=86_400.0, gt=0)
    """How often a repo the Hub listing vouches for still gets a full poll (renames, deletions)."""
    pinned_window_days: float = Field(default=30.0, ge=0)
    """A repo `hubwatch pins check` found a pin of within this many days has its verifications
    claimed before the others' (as a subscription's); 0: pins make no difference."""
    work_tick_s: float = Field(default=5.0, gt=0)
    """How often a worker looks for repos to poll (woken by discovery or a Hub webhook)."""
    lease_s: float = Field(default=300.0, gt=0)
    """How long a worker holds a repo without renewing; a dead worker's repos return after it."""
    worker_id: str | None = Field(default=None, min_length=1, max_length=200)
    """This worker's id in leases and logs (`hubwatch worker --id` too); default: the host's
    name (`host-2`, `host-3`… for more workers of one host on PostgreSQL). A process restarted
    under its id takes back at once the repos it held when it died."""
    poll_concurrency: int = Field(default=4, ge=1, le=64)
    """Repos one worker (or `serve`) polls at the same time, each in a thread of its own."""
    poll_timeout_s: float = Field(default=1800.0, gt=0)
    """A poll that stores no revision for this long is abandoned: recorded as failed, its repo
    given back (polled again when next due), the other repos going on."""
    advisory_refresh_s: float = Field(default=86_400.0, ge=0)
    """How often workers refresh the advisory data and re-check every revision; 0: never."""
    hub_webhook_secret: SecretStr | None = None
    """The secret Hub webhooks must send in X-Webhook-Secret; unset: POST /hooks/hub refuses all."""
    hub_webhook_other_scopes: Literal["record", "ignore"] = "record"
    """Hub webhooks of scopes that wake no poll (discussions, comments): kept among the repo's
    events (`hub_event`), or ignored; never a Hub request either way."""
    hub_webhook_daily_cap: int = Field(default=1_000, ge=1)
    """Triggers the Hub delivers per webhook per day (UTC): reaching it is logged once a day
    (`hub_webhook_cap_reached`); the listing walk finds the changes for the rest of the day."""
    api_host: str = "127.0.0.1"
    """Address `hubwatch serve` listens on."""
    api_port: int = Field(default=8080, ge=0, le=65535)
    """Port `hubwatch serve` listens on."""
    api_token: SecretStr | None = None
    """Bearer token for writes (track, untrack, subscribe); without one, writes are refused."""
    api_public_reads: bool = True
    """Whether reads (API, pages, feeds, badges, /metrics, /docs) need no token; false: they need
    the token too, and only `/healthz` stays public."""
    api_max_body_bytes: int = Field(default=1 * MiB, gt=0)
    """Largest request body the API accepts (413 beyond it, before any of it is parsed)."""
    api_request_timeout_s: float = Field(default=30.0, gt=0)
    """Seconds a client has to send a whole request (head and body), from when it connects or
    gets its previous answer; the connection is closed past it."""
    api_keep_alive_s: int = Field(default=5, ge=1)
    """Seconds an idle kept-alive connection stays open after an answer (uvicorn's
    `timeout_keep_alive`)."""
    public_url: str | None = None
    """The base URL people reach `hubwatch serve` at (`https://hubwatch.example.org`): feed links
    are built from it, never from a request's Host; default `http://<api_host>:<api_port>`."""
    webhook_allow_http: bool = False
    """Accept `http://` webhook URLs (default: https only)."""
    webhook_allowed_networks: list[str] = Field(default_factory=list)
    """CIDRs webhook hosts, and git hosts, may resolve into although private, loopback or
    link-local (JSON list)."""
    webhook_timeout_s: float = Field(default=10.0, gt=0)
    """Timeout of one webhook delivery attempt."""
    webhook_interval_s: float = Field(default=5.0, gt=0)
    """Seconds between two runs of the webhook delivery job in `hubwatch serve`."""
    webhook_retry_base_s: float = Field(default=30.0, gt=0)
    """First retry delay; each later one doubles, up to 8 hours."""
    webhook_retry_window_s: float = Field(default=3 * 24 * 3600.0, gt=0)
    """How long a message is retried before it is given up and its subscription disabled."""
    log_level: str = "INFO"
    """DEBUG, INFO, WARNING or ERROR."""
    log_json: bool = False
    """JSON log lines instead of the console renderer (as `log_format=json`)."""
    log_format: Literal["console", "json"] = "console"
    """How log lines are written on stderr: `console` (for people) or `json` (one object a line,
    for log pipelines); `hubwatch --log-format` overrides it."""

    def resolved_database_url(self) -> str:
        """The database URL to use: the setting, or SQLite in data_dir."""
        if self.database_url is not None:
            return self.database_url.get_secret_value()
        return sqlite_url(self.data_dir)

    def secret_values(self) -> list[str]:
        """Every secret these settings hold, as it may appear in a text: the Hub and API
        tokens, the Hub webhook secret, each git credential (and its token alone), the
        database URL's password (as written and decoded). The log leaves them all out."""
        held = (self.hf_token, self.api_token, self.hub_webhook_secret)
        values = [secret.get_secret_value() for secret in held if secret is not None]
        for credential in self.git_credentials.values():
            value = credential.get_secret_value()
            values += [value, value.partition(":")[2]]
        try:
            password = urlsplit(self.resolved_database_url()).password
        except ValueError:  # unparsable (an unclosed IPv6 bracket): SqlStore refuses it anyway
            password = None
        if password:
            values += [password, unquote(password)]
        return [value for value in values if value]

    def resolved_public_url(self) -> str:
        """The base URL links are built from, without a trailing slash."""
        if self.public_url:
            return self.public_url.rstrip("/")
        host = f"[{self.api_host}]" if ":" in self.api_host else self.api_host
        return f"http://{host}:{self.api_port}"

    def git_hosts(self) -> frozenset[str]:
        """The hosts HUBWATCH_GIT_CREDENTIALS has credentials for, in lower case."""
        return frozenset(host.lower() for host in self.git_credentials)

    @property
    def osv_database_dir(self) -> Path:
        return self.osv_dir or self.data_dir / "osv"

    @property
    def mirrors_dir(self) -> Path:
        return self.data_dir / "mirrors"
