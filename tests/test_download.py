"""Downloads against a local HTTP server on 127.0.0.1 (no test touches the network)."""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import http.server
import threading
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

import repscope.cli
from repscope.data import download
from repscope.data.download import DATASETS, download_dataset, download_file
from repscope.data.sources import load_source
from repscope.errors import ChecksumError, InvalidArgumentError, SourceNotFoundError

PAYLOAD = bytes(range(256)) * 40


class _Handler(http.server.SimpleHTTPRequestHandler):
    """Serves the server's directory; ``/short/NAME`` promises more bytes than it sends."""

    def do_GET(self):  # noqa: N802 (http.server's naming)
        self.server.requests.append(self.path)
        if self.path.startswith("/short/"):
            self.send_response(200)
            self.send_header("Content-Length", "1000")
            self.end_headers()
            self.wfile.write(b"only a few bytes")
            return
        super().do_GET()

    def log_message(self, format, *args):  # keep test output clean
        pass


@pytest.fixture
def server(tmp_path, monkeypatch):
    """``(base_url, served_dir, requests)``: an HTTP server on 127.0.0.1 serving ``served_dir``."""
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    served = tmp_path / "served"
    (served / "good").mkdir(parents=True)
    (served / "good" / "payload.bin").write_bytes(PAYLOAD)
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Handler, directory=str(served)))
    httpd.requests = []
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", served, httpd.requests
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()


def leftovers(directory: Path) -> list[str]:
    return [p.name for p in directory.iterdir() if p.name.startswith(".tmp-")] if directory.exists() else []


def test_good_download_lands_with_the_right_bytes(server, tmp_path):
    base, _, requests = server
    dest = tmp_path / "out" / "payload.bin"
    result = download_file(
        [f"{base}/good/payload.bin"],
        dest,
        md5=hashlib.md5(PAYLOAD).hexdigest(),
        sha256=hashlib.sha256(PAYLOAD).hexdigest().upper(),
    )
    assert result == dest and dest.read_bytes() == PAYLOAD
    assert requests == ["/good/payload.bin"]
    assert leftovers(dest.parent) == []


def test_wrong_checksum_raises_and_leaves_nothing(server, tmp_path):
    base, _, _ = server
    dest = tmp_path / "out" / "payload.bin"
    url = f"{base}/good/payload.bin"
    wrong = "0" * 32
    with pytest.raises(ChecksumError) as caught:
        download_file([url], dest, md5=wrong)
    message = str(caught.value)
    assert url in message and wrong in message and hashlib.md5(PAYLOAD).hexdigest() in message
    assert not dest.exists()
    assert leftovers(dest.parent) == []


def test_first_mirror_404_falls_back_to_second(server, tmp_path):
    base, _, requests = server
    dest = tmp_path / "payload.bin"
    download_file(
        [f"{base}/missing/payload.bin", f"{base}/good/payload.bin"], dest, md5=hashlib.md5(PAYLOAD).hexdigest()
    )
    assert dest.read_bytes() == PAYLOAD
    assert requests == ["/missing/payload.bin", "/good/payload.bin"]


def test_every_mirror_failing_is_source_not_found(server, tmp_path):
    base, _, _ = server
    dest = tmp_path / "payload.bin"
    with pytest.raises(SourceNotFoundError, match="HTTP 404") as caught:
        download_file([f"{base}/missing/payload.bin", f"{base}/short/payload.bin"], dest)
    assert f"{base}/short/payload.bin" in str(caught.value)
    assert not dest.exists() and leftovers(tmp_path) == []


def test_present_file_with_right_checksum_is_not_fetched(server, tmp_path):
    base, _, requests = server
    dest = tmp_path / "payload.bin"
    dest.write_bytes(PAYLOAD)
    download_file([f"{base}/good/payload.bin"], dest, md5=hashlib.md5(PAYLOAD).hexdigest())
    assert requests == []

    dest.write_bytes(b"stale")  # wrong checksum: fetched again and replaced
    download_file([f"{base}/good/payload.bin"], dest, md5=hashlib.md5(PAYLOAD).hexdigest())
    assert requests == ["/good/payload.bin"] and dest.read_bytes() == PAYLOAD


@pytest.fixture
def fake_mnist_mirror(server, tiny_mnist_dir, monkeypatch):
    """The tiny MNIST files served under ``/mnist/`` and registered as the ``mnist`` download."""
    base, served, requests = server
    (served / "mnist").mkdir()
    checksums = {}
    for path in sorted(tiny_mnist_dir.iterdir()):
        (served / "mnist" / path.name).write_bytes(path.read_bytes())
        checksums[path.name] = hashlib.md5(path.read_bytes()).hexdigest()
    assert set(checksums) == set(DATASETS["mnist"].md5)
    fake = dataclasses.replace(DATASETS["mnist"], base_urls=(f"{base}/missing", f"{base}/mnist"), md5=checksums)
    monkeypatch.setitem(download.DATASETS, "mnist", fake)
    return base, requests


def test_download_dataset_gives_a_loadable_source(fake_mnist_mirror, isolated_home, tiny_mnist):
    _, requests = fake_mnist_mirror
    directory = download_dataset("mnist")
    assert directory == isolated_home / "datasets" / "mnist"
    assert len([r for r in requests if r.startswith("/mnist/")]) == 4
    for source in (str(directory), "mnist"):
        train = load_source(source, split="train")
        assert np.array_equal(train.images, tiny_mnist["train"][0])
        assert np.array_equal(train.labels, tiny_mnist["train"][1])
    fetched = len(requests)
    download_dataset("mnist")
    assert len(requests) == fetched  # all four present with the right checksums


def test_download_dataset_base_urls_override(fake_mnist_mirror, tmp_path):
    base, requests = fake_mnist_mirror
    directory = download_dataset("mnist", dest_dir=tmp_path / "here", base_urls=[f"{base}/mnist/"])
    assert len(load_source(str(directory), split="t10k")) == 12
    assert not any(r.startswith("/missing/") for r in requests)


def test_download_dataset_rejects_unknown_names(tmp_path):
    with pytest.raises(InvalidArgumentError, match="mnist, fashion-mnist"):
        download_dataset("cifar", dest_dir=tmp_path)


def test_registry_holds_the_published_checksums():
    assert DATASETS["mnist"].md5["train-images-idx3-ubyte.gz"] == "f68b3c2dcbeaaa9fbdd348bbdeb94873"
    assert DATASETS["fashion-mnist"].md5["t10k-labels-idx1-ubyte.gz"] == "bb300cfdad3c16e7a12a480ee83cd310"
    assert DATASETS["mnist"].base_urls[0] == "https://ossci-datasets.s3.amazonaws.com/mnist/"


def test_cli_download(fake_mnist_mirror, tmp_path):
    dest = tmp_path / "cli-mnist"
    result = CliRunner().invoke(repscope.cli.app, ["data", "download", "mnist", "--out", str(dest)])
    assert result.exit_code == 0, result.output
    assert f"ready in {dest}" in result.output
    assert len(load_source(str(dest))) == 42
