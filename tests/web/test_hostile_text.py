"""Text users write (collection, item and process titles, parameter choices) is shown as text:
markup in it makes no element and runs no script."""

from __future__ import annotations

from playwright.sync_api import Page, expect

from ..service.conftest import PACKAGES, zip_folder
from .conftest import HOSTILE, sign_in


def nothing_ran(page: Page) -> None:
    assert page.evaluate("window.hacked") is None
    assert page.locator("img[src='x']").count() == 0
    assert page.locator("b.injected").count() == 0


def test_titles_with_markup_are_shown_as_text(page, live, tmp_path):
    folder = tmp_path / "hostile"
    folder.mkdir()
    manifest = (PACKAGES / "sizes" / "algorithm.yaml").read_text()
    manifest = (
        manifest.replace("id: granule-sizes", "id: bobs-sizes")
        .replace("title: Granule sizes", f"title: '{HOSTILE}'")
        .replace(
            "    scale:\n",
            "    flavour:\n      type: string\n"
            "      enum: ['<b class=injected>bold</b>', plain]\n    scale:\n",
        )
    )
    (folder / "algorithm.yaml").write_text(manifest)
    (folder / "run.py").write_text((PACKAGES / "sizes" / "run.py").read_text())

    sign_in(page, live, user="bob")
    option = page.locator("#search-collection option[value=bobs-collection]")
    expect(option).to_have_text(f"{HOSTILE} (bobs-collection)")
    page.select_option("#search-collection", "bobs-collection")
    page.click("#search-form button[type=submit]")
    row = page.locator("#search-results tbody tr", has_text="bobs-granule")
    expect(row.locator("td").nth(1)).to_have_text(HOSTILE)
    row.click()
    expect(page.locator("#item table.pairs")).to_contain_text(HOSTILE)
    nothing_ran(page)

    page.click("#nav a[data-view=processes]")
    page.set_input_files(
        "#deploy-file",
        files=[{"name": "h.zip", "mimeType": "application/zip", "buffer": zip_folder(folder)}],
    )
    page.click("#deploy-form button[type=submit]")
    expect(page.locator("#deploy-message")).to_have_text("Deployed bobs-sizes 1.0.")
    row = page.locator("#process-list tbody tr", has_text="bobs-sizes")
    expect(row.locator("td").nth(2)).to_have_text(HOSTILE)
    row.click()
    expect(page.locator("#process h2")).to_have_text(f"{HOSTILE} 1.0")
    page.click("#process button.order")
    choices = page.locator("#order-form select[name=flavour] option")
    expect(choices.nth(1)).to_have_text("<b class=injected>bold</b>")  # after "(not given)"
    nothing_ran(page)
