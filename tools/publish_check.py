"""Refuse to publish the book while a publishing setting is still a placeholder.

The repository and JupyterHub URLs live in one block of ``_config.yml``, ``publish:``
(``repository_url``, ``jupyterhub_url``); the repository button, Binder's launch button
and the JupyterHub button read them through YAML aliases. The repository ships with
placeholders there, so that the book builds and tests anywhere; a site published with
them would send every reader's launch button to a repository or hub that is not the
publisher's. This check fails, naming the setting, while either is a placeholder, is not
an https URL, or is not what the buttons read.

Usage: ``python tools/publish_check.py [CONFIG]`` (``make publish-check``); exit status 0
when the settings may be published, 1 otherwise, with one line per problem.
"""

from __future__ import annotations

import sys
from pathlib import Path
from urllib.parse import urlparse

import yaml

ROOT = Path(__file__).resolve().parent.parent

#: The values the repository ships with: never a publisher's.
PLACEHOLDERS = {
    "repository_url": "https://github.com/ibp-lab/ibp-lab",
    "jupyterhub_url": "https://hub.example.org",
}
#: Hosts reserved for examples (RFC 2606, RFC 6761): a URL on them reaches nobody's site.
EXAMPLE_HOSTS = ("example.org", "example.com", "example.net", "localhost")


def _is_example_host(host: str) -> bool:
    return any(host == name or host.endswith("." + name) for name in EXAMPLE_HOSTS)


def url_problem(setting: str, value, *, may_be_empty: bool) -> str | None:
    """What is wrong with one publishing setting, in words, or None.

    Parameters
    ----------
    setting : str
        The setting's name under ``publish:`` (for the message).
    value : object
        Its value as ``_config.yml`` gives it.
    may_be_empty : bool
        Whether "" (no button) is allowed.

    Returns
    -------
    str or None
        A sentence naming the setting and what to do, or None if it may be published.

    Examples
    --------
    >>> url_problem("jupyterhub_url", "https://hub.example.org", may_be_empty=True)[:40]
    'publish.jupyterhub_url in _config.yml is'
    >>> url_problem("repository_url", "https://github.com/me/my-ibp-course", may_be_empty=False)
    """
    name = f"publish.{setting} in _config.yml"
    if value in (None, ""):
        return None if may_be_empty else f"{name} is empty: set it to your repository's URL"
    if not isinstance(value, str):
        return f"{name} must be a URL (a string), not {value!r}"
    if value.rstrip("/") == PLACEHOLDERS.get(setting) or "placeholder" in value.lower():
        return f"{name} is still the placeholder {value!r}: set it to your own URL"
    parsed = urlparse(value)
    if parsed.scheme != "https" or not parsed.netloc:
        return f"{name} must be an https URL, not {value!r}"
    if _is_example_host(parsed.hostname or ""):
        return f"{name} points at an example host ({parsed.hostname}): set it to your own URL"
    return None


def problems(config: dict) -> list[str]:
    """Every reason the configuration may not be published (empty: it may).

    Examples
    --------
    >>> problems({"publish": {"repository_url": "https://github.com/me/ibp",
    ...                       "jupyterhub_url": ""},
    ...           "repository": {"url": "https://github.com/me/ibp"},
    ...           "launch_buttons": {"jupyterhub_url": ""}})
    []
    """
    if not isinstance(config, dict) or not isinstance(config.get("publish"), dict):
        return ["_config.yml has no 'publish:' block with repository_url and jupyterhub_url"]
    settings = config["publish"]
    found = [url_problem("repository_url", settings.get("repository_url"), may_be_empty=False),
             url_problem("jupyterhub_url", settings.get("jupyterhub_url"), may_be_empty=True)]
    # the buttons must read the block (an edit that replaced an alias by a URL would
    # leave the block and the buttons disagreeing)
    readers = {"repository.url": ((config.get("repository") or {}).get("url"),
                                  settings.get("repository_url")),
               "launch_buttons.jupyterhub_url":
                   ((config.get("launch_buttons") or {}).get("jupyterhub_url"),
                    settings.get("jupyterhub_url"))}
    for where, (used, set_) in readers.items():
        if used != set_:
            found.append(f"{where} in _config.yml is {used!r} but the publish: block says "
                         f"{set_!r}: make it the alias the block defines")
    return [p for p in found if p]


def main(argv: list[str]) -> int:
    path = Path(argv[0]) if argv else ROOT / "_config.yml"
    found = problems(yaml.safe_load(path.read_text()))
    for line in found:
        print(f"publish-check: {line}", file=sys.stderr)
    if found:
        print("publish-check: not publishable (README, 'Publishing', says what to set)",
              file=sys.stderr)
        return 1
    print("publish-check: the publishing settings are set")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
