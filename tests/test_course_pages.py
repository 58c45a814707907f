"""The course layer (issue 50): licences, the publishing check, and the pages for teachers.

A lecturer must find the licences and the pages from the README and the table of
contents; a course site must be able to hand out the problem sets without their keys; the
book must refuse to publish with the placeholder URLs. No build is needed: these read the
sources and the configuration, and run the publishing check on edited copies of it.
"""

from __future__ import annotations

import importlib.util
import re
import sys
import tomllib
from pathlib import Path

import pytest
import yaml

from tests.book_pages import ROOT, toc_pages

NEW_PAGES = ["book/prerequisites", "book/teaching", "book/projects"] + [
    f"book/problems/week{week}" for week in range(1, 7)]
EXERCISE = re.compile(r"^```\{exercise\}\n:label: (\S+)", re.M)
SOLUTION = re.compile(r"^```\{solution-start\} (\S+)", re.M)


def _tool(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "tools" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


PUBLISH = _tool("publish_check")
CONFIG = yaml.safe_load((ROOT / "_config.yml").read_text())


@pytest.mark.parametrize("page", NEW_PAGES)
def test_each_course_page_is_in_the_table_of_contents(page):
    assert page in toc_pages()
    assert (ROOT / f"{page}.md").exists()


def test_the_code_is_mit_and_pyproject_says_so_in_spdx():
    text = (ROOT / "LICENSE").read_text()
    assert text.startswith("MIT License") and "Copyright (c) 2026 ibp-lab contributors" in text
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["license"] == "MIT" and "LICENSE" in project["license-files"]


def test_the_text_is_cc_by_with_a_link_to_the_legal_code():
    text = (ROOT / "LICENSE-text.md").read_text()
    assert "CC BY 4.0" in text
    assert "https://creativecommons.org/licenses/by/4.0/legalcode" in text
    assert "ibp_lab/data/ATTRIBUTION.md" in text  # the data keep their own terms


def test_every_page_footer_names_both_licences_and_the_data():
    footer = CONFIG["html"]["extra_footer"]
    for phrase in ("CC BY 4.0", "MIT", "optdigits"):
        assert phrase in footer
    assert 'href="https://creativecommons.org/licenses/by/4.0/"' in footer


def test_the_readme_points_at_the_licences_and_the_teaching_pages():
    readme = (ROOT / "README.md").read_text()
    sections = re.findall(r"^## (.+)$", readme, re.M)
    assert "Licence" in sections and "Teaching" in sections
    for path in ("LICENSE", "LICENSE-text.md", "book/teaching.md", "book/prerequisites.md",
                 "book/problems/", "book/projects.md"):
        assert path in readme, path


# --- the publishing check --------------------------------------------------------------

def _config_with(repository_url, jupyterhub_url):
    """The shipped configuration with the publish: block set, the buttons reading it."""
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    config["publish"] = {"repository_url": repository_url, "jupyterhub_url": jupyterhub_url}
    config["repository"]["url"] = repository_url
    config["launch_buttons"]["jupyterhub_url"] = jupyterhub_url
    return config


def test_the_shipped_placeholders_are_refused_by_name():
    found = PUBLISH.problems(CONFIG)
    assert len(found) == 2
    assert "publish.repository_url" in found[0] and "placeholder" in found[0]
    assert "publish.jupyterhub_url" in found[1]


def test_the_buttons_read_the_one_marked_setting():
    assert CONFIG["repository"]["url"] == CONFIG["publish"]["repository_url"]
    assert (CONFIG["launch_buttons"]["jupyterhub_url"]
            == CONFIG["publish"]["jupyterhub_url"])
    assert "&repository_url" in (ROOT / "_config.yml").read_text()  # an alias, not a copy


def test_real_urls_pass_and_an_empty_hub_means_no_button():
    assert PUBLISH.problems(_config_with("https://github.com/uni-x/ibp-course",
                                         "https://jupyter.uni-x.edu")) == []
    assert PUBLISH.problems(_config_with("https://github.com/uni-x/ibp-course", "")) == []


@pytest.mark.parametrize("repository, hub, named", [
    ("", "", "publish.repository_url"),
    ("http://github.com/uni-x/ibp", "", "publish.repository_url"),
    ("https://github.com/uni-x/ibp", "https://hub.example.com", "publish.jupyterhub_url"),
    ("https://github.com/ibp-lab/ibp-lab/", "", "publish.repository_url"),
])
def test_bad_settings_are_refused_by_name(repository, hub, named):
    found = PUBLISH.problems(_config_with(repository, hub))
    assert found and named in found[0]


def test_a_button_that_stopped_reading_the_setting_is_refused():
    config = _config_with("https://github.com/uni-x/ibp", "")
    config["repository"]["url"] = "https://github.com/someone-else/ibp"
    assert any("repository.url" in line for line in PUBLISH.problems(config))


def test_the_check_exits_nonzero_on_the_shipped_config(capsys):
    assert PUBLISH.main([str(ROOT / "_config.yml")]) == 1
    assert "publish.repository_url" in capsys.readouterr().err


# --- the pages ---------------------------------------------------------------------------

@pytest.mark.parametrize("page", [p for p in NEW_PAGES if "problems" in p]
                         + ["book/prerequisites"])
def test_every_exercise_has_its_solution_and_the_student_edition_strips_them(page):
    text = (ROOT / f"{page}.md").read_text()
    labels = EXERCISE.findall(text)
    assert labels and labels == SOLUTION.findall(text)
    student = _tool("student_edition").strip_solutions(text)
    assert EXERCISE.findall(student) == labels
    assert "{solution" not in student and "*Marking.*" not in student


@pytest.mark.parametrize("page", NEW_PAGES)
def test_course_pages_run_no_kernel(page):
    # plain Markdown pages: no front matter, so the build executes nothing for them
    assert not (ROOT / f"{page}.md").read_text().startswith("---")


def test_the_map_is_committed_with_a_text_alternative():
    assert (ROOT / "book" / "_static" / "chapter_map.svg").exists()
    text = (ROOT / "book" / "teaching.md").read_text()
    alt = re.search(r"^:alt: (.+)$", text, re.M)
    assert alt and len(alt[1].split()) > 50


def test_the_map_knows_every_chapter_of_the_table_of_contents():
    chapter_map = _tool("chapter_map")
    assert set(chapter_map.toc_chapters()) == set(chapter_map.PREREQUISITES)
    assert set(chapter_map.LAYOUT) == set(chapter_map.PREREQUISITES)


def test_the_teaching_page_states_the_hours_the_rule_gives():
    """The page rounds to whole hours; chapters edited since drift by minutes. When this
    fails, run ``python tools/chapter_map.py --hours`` and update the page."""
    rows = _tool("chapter_map").hours_table()
    core = sum(row[2] for row in rows)
    whole = sum(row[3] for row in rows)
    text = (ROOT / "book" / "teaching.md").read_text()
    stated_core = int(re.search(r"core path takes \*\*(\d+) hours\*\*", text)[1])
    stated_whole = int(re.search(r"case studies included, (\d+)\)", text)[1])
    assert abs(stated_core - core) < 1.0, (stated_core, core)
    assert abs(stated_whole - whole) < 1.0, (stated_whole, whole)


def test_the_teaching_page_states_each_chapters_hours_to_a_tenth():
    """The per-chapter list ("Per chapter, by the same rule ...") names the chapters in
    reading order, each as core hours, or core / whole when the chapter has case studies.
    Each figure is the rule's hours rounded to a tenth; 0.051 allows the rounding and
    nothing more. When this fails, run ``python tools/chapter_map.py --hours``."""
    rows = _tool("chapter_map").hours_table()
    text = (ROOT / "book" / "teaching.md").read_text()
    listing = re.search(r"Per chapter, by the same rule \(core / whole chapter, hours\): "
                        r"(.+?)\.\n\n", text, re.S)[1]
    entries = [entry.strip() for entry in listing.replace("\n", " ").split(";")]
    assert len(entries) == len(rows), entries
    for entry, (stem, _, core, whole) in zip(entries, rows):
        numbers = [float(x) for x in re.findall(r"\d+\.\d", entry)]
        expected = [core] if len(numbers) == 1 else [core, whole]
        assert len(numbers) in (1, 2) and (len(numbers) == 2 or abs(core - whole) < 0.05), (
            stem, entry)
        for stated, computed in zip(numbers, expected):
            assert abs(stated - computed) < 0.051, (stem, entry, computed)
