"""Debian's Chromium, headless, driven by Selenium through Debian's chromedriver: the one
way the tests' and the benchmarks' browser scripts start it.

    from headless import chromium
    driver = chromium("--mute-audio")

The flags every script needs (no sandbox and no /dev/shm as root in a container, no GPU on
a headless machine) come first; a script adds its own (sound muted, autoplay, a profile
directory, a certificate of the test's making accepted).
"""

from selenium import webdriver
from selenium.webdriver.chrome.service import Service

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
FLAGS = ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu")


def chromium(*extra: str) -> webdriver.Chrome:
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in FLAGS + extra:
        options.add_argument(flag)
    return webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
