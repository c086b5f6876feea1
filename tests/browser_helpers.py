"""A real headless Chromium (Debian's chromium + chromedriver) under Selenium, for the Studio tests.

Nothing is downloaded: the browser and its driver are the system's (``.ci/run`` installs them).
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"


def chromium(profile: Path, *, dark: bool = False) -> Any:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    if not (Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()):
        pytest.skip("chromium and chromedriver are not installed (apt-get install chromium chromium-driver)")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in (
        "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-dev-shm-usage",
        f"--user-data-dir={profile}", "--window-size=1100,900", "--force-device-scale-factor=1",
    ):
        options.add_argument(arg)
    if dark:
        options.add_argument("--force-dark-mode")
        options.add_argument("--blink-settings=preferredColorScheme=0")
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(30)
    return driver


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[Any]:
    driver = chromium(tmp_path / "chromium-profile")
    try:
        yield driver
    finally:
        driver.quit()


def wait_for(driver: Any, condition: Callable[[Any], Any], timeout: float = 60, message: str = "") -> Any:
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.support.ui import WebDriverWait

    # a part of the page drawn again (a refreshed panel) between finding an element and reading it: look again
    return WebDriverWait(driver, timeout, poll_frequency=0.05, ignored_exceptions=(StaleElementReferenceException,)).until(condition, message)


def screenshot(driver: Any, folder: Path, name: str, *, full: bool = True) -> Path:
    """Save the page as ``folder/name.png`` (the whole page height when ``full``)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.png"
    if full:
        driver.execute_script("window.scrollTo(0, 0)")
        height = driver.execute_script("return Math.min(document.documentElement.scrollHeight, 4000)")
        chrome = driver.execute_script("return window.outerHeight - window.innerHeight")
        driver.set_window_size(1100, max(600, height + chrome))
    driver.save_screenshot(str(path))
    if full:
        driver.set_window_size(1100, 900)
    return path
