"""Algorithms, orders and jobs through the page: deploying a zip with the file picker, the
order form made from the process description, a job watched to its end with its runs'
stations and usage, a result downloaded with the token, dismissing; and the user's string."""

from __future__ import annotations

from playwright.sync_api import Page, expect

from ..live_service import nearline
from ..service.conftest import PACKAGES, zip_folder
from .conftest import sign_in, snap

STATIONS = ["queued", "stage", "allocate", "run", "ingest", "cleanup"]


def choose_zip(page: Page, name: str, content: bytes) -> None:
    page.set_input_files(
        "#deploy-file", files=[{"name": name, "mimeType": "application/zip", "buffer": content}]
    )


def test_a_refused_package_is_shown_in_the_apis_words(page, live):
    sign_in(page, live, view="processes")
    choose_zip(page, "broken.zip", b"not a zip at all")
    page.click("#deploy-form button[type=submit]")
    with live.client("alice") as client:
        refused = client.post(
            "/processes", content=b"not a zip at all", headers={"Content-Type": "application/zip"}
        ).json()
    message = page.locator("#deploy-message")
    expect(message).to_contain_text(refused["detail"])
    expect(message).to_have_class("message error")


def test_deploy_order_watch_download_and_dismiss(page, live, screens):
    sign_in(page, live)
    box = "-180,-10,-100,10"
    for side, value in zip(("west", "south", "east", "north"), box.split(","), strict=True):
        page.fill(f"#bbox-{side}", value)
    page.click("#search-form button[type=submit]")
    expect(page.locator("#search-summary")).to_contain_text("Items 1 to 8")

    page.click("#nav a[data-view=processes]")
    choose_zip(page, "sizes.zip", zip_folder(PACKAGES / "sizes"))
    page.click("#deploy-form button[type=submit]")
    expect(page.locator("#deploy-message")).to_have_text("Deployed granule-sizes 1.0.")
    row = page.locator("#process-list tbody tr", has_text="granule-sizes")
    expect(row).to_contain_text("private")
    expect(page.locator("#process-list tbody tr", has_text="pathfinder")).to_contain_text("public")
    row.click()
    expect(page.locator("#process table.parameters")).to_contain_text("scale")
    snap(page, screens, "algorithms")
    page.click("#process button.order")
    form = page.locator("#order-form")
    expect(form).to_contain_text("the current search (every collection; box -180, -10, -100, 10)")
    expect(form.locator("input[name=scale]")).to_have_value("1")  # the schema's default
    form.locator("input[name=scale]").fill("2")
    snap(page, screens, "order")
    form.locator("button[type=submit]").click()

    status = page.locator("#job-status")
    expect(status).to_have_text("successful", timeout=90_000)
    job_id = page.url.rsplit("#jobs/", 1)[1]
    with live.client("alice") as client:
        job = client.get(f"/jobs/{job_id}").json()
        results = client.get(f"/jobs/{job_id}/results").json()
        (link,) = results["summary"][:1]
        expected = client.get(link["href"]).content
    assert job["status"] == "successful"
    runs = page.locator("#job table.runs tbody tr")
    expect(runs).to_have_count(len(job["nearline:runs"]))
    assert len(job["nearline:runs"]) == 2  # 8 granules, at most 4 a run
    for index in range(2):
        expect(runs.nth(index).locator("td").nth(1)).to_have_text("done")
        expect(runs.nth(index).locator("td").nth(5)).to_have_text("4")  # inputs
        expect(runs.nth(index).locator("td").nth(6)).to_contain_text(" s")  # CPU seconds
    assert page.locator("#job table.stations th").all_text_contents() == STATIONS
    expect(page.locator("#job pre.logs")).to_contain_text("summarised 4 granules")
    expect(page.locator("#job table.results tbody tr")).to_have_count(2)
    page.evaluate("document.querySelector('#job h3').scrollIntoView()")
    snap(page, screens, "job")

    with page.expect_download() as started:
        page.locator("#job table.results button.download").first.click()
    assert started.value.path().read_bytes() == expected
    assert started.value.suggested_filename == "summary.json"

    page.click("#job button.dismiss")
    expect(page.locator("#job")).to_be_hidden()
    with live.client("alice") as client:
        after = client.get(f"/jobs/{job_id}").json()
    listed = page.locator("#job-list tbody tr", has_text=job_id)
    expect(listed).to_contain_text(after["status"])
    expect(listed).to_contain_text(after["message"])
    snap(page, screens, "jobs")


def test_a_parameter_with_choices_is_a_choice(page, live, tmp_path):
    folder = tmp_path / "choices"
    folder.mkdir()
    manifest = (PACKAGES / "sizes" / "algorithm.yaml").read_text()
    manifest = manifest.replace("id: granule-sizes", "id: granule-choices").replace(
        "    scale:\n",
        "    mode:\n      type: string\n      enum: [fast, careful]\n      default: careful\n"
        "    count:\n      type: integer\n      minimum: 1\n    scale:\n",
    )
    (folder / "algorithm.yaml").write_text(manifest)
    (folder / "run.py").write_text((PACKAGES / "sizes" / "run.py").read_text())
    sign_in(page, live, view="processes")
    choose_zip(page, "choices.zip", zip_folder(folder))
    page.check("#deploy-public")
    page.click("#deploy-form button[type=submit]")
    expect(page.locator("#deploy-message")).to_have_text("Deployed granule-choices 1.0.")
    row = page.locator("#process-list tbody tr", has_text="granule-choices")
    expect(row).to_contain_text("public")
    row.click()
    page.click("#process button.order")
    mode = page.locator("#order-form select[name=mode]")
    assert mode.locator("option").all_text_contents() == ["fast", "careful"]
    assert mode.locator("option:checked").text_content() == "careful"
    count = page.locator("#order-form input[name=count]")
    assert count.get_attribute("step") == "1"
    assert count.get_attribute("min") == "1"
    count.fill("2.5")
    assert count.evaluate("input => input.validity.stepMismatch")  # the browser holds it back
    count.fill("2")
    assert count.evaluate("input => input.validity.valid")


def test_my_string_shows_the_quota_and_usage_the_api_gives(page, live, screens):
    nearline("users", "set", "alice", "--disk", "1GiB", "--cpus", "2", data=live.data)
    with live.client("alice") as client:
        me = client.get("/users/me").json()
    assert me["quota"]["disk"] == 2**30
    sign_in(page, live, view="me")
    rows = page.locator("#me-table tbody tr")
    expect(rows.nth(0)).to_contain_text("2 CPUs")
    expect(rows.nth(1)).to_contain_text("no limit")
    expect(rows.nth(2)).to_contain_text("1.0 GiB")
    disk = rows.nth(2).locator("td").nth(2).text_content()
    used = me["usage"]["disk"]
    assert disk == (f"{used} B" if used < 1024 else f"{used / 1024:.1f} KiB")
    expect(page.locator("#me-queued")).to_have_text(
        f"{me['usage']['runs_queued']} of your runs wait in the queue."
    )
    snap(page, screens, "me")
