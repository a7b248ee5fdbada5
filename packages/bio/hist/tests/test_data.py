import gzip

import numpy as np
import pytest

from icml26.hist import featurise_patches, load_her2st, load_her2st_subset, make_slide, to_lattice


def test_bundled_her2st_subset():
    slides = load_her2st_subset()
    assert list(slides) == ["C2", "C3", "C4", "C5", "C6"]
    for s in slides.values():
        # the union of every fold's 50 most variable and 50 most expressed genes
        assert 150 < len(s) < 200 and s.counts.shape == (len(s), 101)
        assert s.features.shape == (len(s), 24) and np.isfinite(s.features).all()
        lat = to_lattice(s.xy)  # legacy ST: a square lattice, pitch inferred from the pixels
        assert lat.step == pytest.approx((290, 290), rel=0.03)  # 200 um at ~0.69 um/px
        assert not lat.moved.any()
    assert slides["C2"].genes == slides["C6"].genes


def test_featuriser_sees_stain():
    white = np.full((1, 32, 32, 3), 250, np.uint8)
    purple = np.zeros((1, 32, 32, 3), np.uint8) + np.array([80, 40, 140], np.uint8)
    f = featurise_patches(np.concatenate([white, purple]))
    assert f[0, 20] == 1.0 and f[1, 20] == 0.0  # background fraction
    assert f[1, 12] > f[0, 12]  # haematoxylin density
    with pytest.raises(ValueError, match="patches"):
        featurise_patches(np.zeros((2, 8, 8)))


def _write_section(root, counts_text, spots_text):
    from PIL import Image

    root.mkdir(exist_ok=True)
    with gzip.open(root / "S1.tsv.gz", "wt") as f:
        f.write(counts_text)
    (root / "S1_sel.tsv").write_text(spots_text)
    Image.new("RGB", (400, 400), (200, 150, 200)).save(root / "S1.jpg")


SPOTS = "x\ty\tpixel_x\tpixel_y\tselected\n1\t1\t100\t100\t1\n2\t1\t200\t100\t1\n"


def test_load_her2st_reads_original_files(tmp_path):
    _write_section(tmp_path, "\tG1\tG2\n1x1\t3\t0\n2x1\t1\t5\n", SPOTS)
    sec = load_her2st(tmp_path, "S1", patch_px=8)
    assert sec.spot_names == ["1x1", "2x1"] and sec.genes == ["G1", "G2"]
    assert sec.counts.tolist() == [[3, 0], [1, 5]] and sec.patches.shape == (2, 8, 8, 3)


@pytest.mark.parametrize(
    ("counts", "spots", "msg"),
    [
        ("\tG1\tG2\n1x1\t3\t0\n2x1\t1\n", SPOTS, r"S1.tsv.gz:3: 2 fields, header has 3"),
        ("\tG1\tG2\n1x1\t3\tzero\n", SPOTS, r"S1.tsv.gz:2: counts must be numbers"),
        ("\tG1\tG2\n1x1\t3\t-1\n", SPOTS, r"S1.tsv.gz:2: counts must be non-negative"),
        ("\tG1\n1x1\t3\n", "x\ty\tpixel_x\tpixel_y\n1\t1\tabc\t1\n", r"S1_sel.tsv:2: x, y"),
        ("\tG1\n1x1\t3\n", "x\ty\tpx\n1\t1\t3\n", r"S1_sel.tsv:1: .*pixel_x"),
        ("\tG1\n9x9\t3\n", SPOTS, r"no spot matches"),
    ],
)
def test_malformed_files_name_file_and_line(tmp_path, counts, spots, msg):
    _write_section(tmp_path, counts, spots)
    with pytest.raises(ValueError, match=msg):
        load_her2st(tmp_path, "S1", patch_px=8)


def test_missing_files_are_named(tmp_path):
    with pytest.raises(ValueError, match=r"S9\.tsv\.gz not found"):
        load_her2st(tmp_path, "S9")


@pytest.mark.parametrize("hexagonal", [False, True])
def test_synthetic_slides(hexagonal):
    s = make_slide(500, seed=3, hexagonal=hexagonal)
    assert len(s) == 500 and s.counts.shape == (500, 50) and s.features.shape == (500, 32)
    lat = to_lattice(s.xy, s.step, hexagonal=hexagonal)
    assert not lat.moved.any()  # generated on the lattice: no collisions
    again = make_slide(500, seed=3, hexagonal=hexagonal)
    np.testing.assert_array_equal(again.counts, s.counts)


def test_load_her2st_reads_the_published_repository_layout(tmp_path):
    from PIL import Image

    data = tmp_path / "her2st" / "data"
    (data / "ST-cnts").mkdir(parents=True)
    (data / "ST-spotfiles").mkdir()
    (data / "ST-imgs" / "B" / "B1").mkdir(parents=True)
    with gzip.open(data / "ST-cnts" / "B1.tsv.gz", "wt") as f:
        f.write("\tG1\tG2\n1x1\t3\t0\n2x1\t1\t5\n")
    (data / "ST-spotfiles" / "B1_selection.tsv").write_text(SPOTS)
    Image.new("RGB", (400, 400), (200, 150, 200)).save(data / "ST-imgs/B/B1/HE_BT24044_D2.jpg")
    for root in (tmp_path / "her2st", data):  # the repository, or its data/ folder
        sec = load_her2st(root, "B1", patch_px=8)
        assert sec.spot_names == ["1x1", "2x1"] and sec.counts.tolist() == [[3, 0], [1, 5]]
    Image.new("RGB", (10, 10)).save(data / "ST-imgs/B/B1/another.jpg")
    with pytest.raises(ValueError, match=r"2 \.jpg files"):
        load_her2st(data, "B1", patch_px=8)
