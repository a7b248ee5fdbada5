"""The command line: the quick demo's results file, train then upscale, clear errors."""

import numpy as np
from skimage.io import imread, imsave

from icml26.testing import validate_results
from icml26.varsr.cli import main


def test_quick_demo_writes_valid_results(tmp_path):
    assert main(["demo", "--quick", "--out", str(tmp_path)]) == 0
    res = validate_results(tmp_path / "results.json")
    assert res["quick"] and res["verdict"] == "smoke" and len(res["claims"]) == 5
    assert (tmp_path / "grid.png").is_file()


def test_train_then_upscale_an_image_file(tmp_path):
    images = tmp_path / "images"
    images.mkdir()
    rng = np.random.default_rng(0)
    for i in range(2):
        imsave(images / f"{i}.png", (rng.random((48, 48, 3)) * 255).astype(np.uint8))
    out = tmp_path / "run"
    args = ["train", "--out", str(out), "--images", str(images), "--tokenizer-steps", "2"]
    args += ["--var-steps", "2", "--dpo-steps", "1", "--batch", "4", "--save-every", "1"]
    assert main(args) == 0
    lr = tmp_path / "lr.png"
    imsave(lr, (rng.random((10, 12, 3)) * 255).astype(np.uint8))
    sr, x2 = tmp_path / "sr.png", tmp_path / "x2.png"
    cmd = ["upscale", str(lr), str(sr), "--model", str(out / "model"), "--x2", str(x2)]
    assert main(cmd) == 0
    assert imread(sr).shape[:2] == (40, 48) and imread(x2).shape[:2] == (20, 24)


def test_bad_arguments_end_in_a_named_error(tmp_path, capsys):
    assert main(["demo", "--seeds", "1", "--out", str(tmp_path)]) == 2
    assert "--seeds must be >= 2" in capsys.readouterr().err
    missing = tmp_path / "missing.png"
    no_model = ["--model", str(tmp_path)]
    assert main(["upscale", str(missing), str(tmp_path / "o.png"), *no_model]) == 2
    assert "not a saved icml26-varsr model" in capsys.readouterr().err
