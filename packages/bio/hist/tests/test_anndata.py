"""AnnData in and out, as scanpy / squidpy / Space Ranger users hold their slides."""

import anndata as ad
import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
import torch

from icml26.hist import Slide, TrainConfig, train
from icml26.hist.baselines import BaselineConfig, SpotMLP
from icml26.hist.cli import main
from icml26.hist.train import predict_anndata


def _visium(rows=6, cols=8, genes=12, seed=0) -> ad.AnnData:
    """A Visium-like slide: hexagonal array coordinates (doubled column index), pixel positions,
    counts in a sparse layer, a normalised X, image features, and uns["spatial"] with an image."""
    rng = np.random.default_rng(seed)
    r, c = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
    array_row = r.ravel()
    array_col = 2 * c.ravel() + array_row % 2  # each row's columns share a parity, rows alternate
    n = len(array_row)
    pixels = np.stack([array_col * 50.0 + 7, array_row * 86.6 + 3], 1)
    counts = sp.csr_matrix(rng.poisson(3.0, (n, genes)).astype(np.float32))
    names = [f"spot{i}" for i in range(n)]
    obs = pd.DataFrame(
        {"array_row": array_row, "array_col": array_col, "in_tissue": 1, "cluster": "a"},
        index=names,
    )
    adata = ad.AnnData(
        X=np.log1p(counts.toarray()),
        obs=obs,
        var=pd.DataFrame(index=[f"G{j}" for j in range(genes)]),
        layers={"counts": counts},
    )
    adata.obsm["spatial"] = pixels
    adata.obsm["features"] = rng.normal(size=(n, 5)).astype(np.float32)
    adata.uns["spatial"] = {
        "lib1": {
            "images": {"hires": rng.random((20, 30, 3)).astype(np.float32)},
            "scalefactors": {"tissue_hires_scalef": 0.1, "spot_diameter_fullres": 40.0},
        }
    }
    return adata


def test_from_anndata_uses_array_coordinates_layers_and_gene_subsets():
    adata = _visium()
    s = Slide.from_anndata(adata, layer="counts", name="v")
    assert s.hexagonal  # detected from the column parity of each row
    np.testing.assert_array_equal(s.coords[:, 0], adata.obs["array_row"])
    np.testing.assert_array_equal(s.coords[:, 1], adata.obs["array_col"] // 2)
    np.testing.assert_array_equal(s.counts, adata.layers["counts"].toarray())
    np.testing.assert_allclose(s.library_size, adata.layers["counts"].sum(1).A1)
    sub = Slide.from_anndata(adata, layer="counts", genes=["G3", "G0"])
    assert sub.genes == ["G3", "G0"] and sub.counts.shape == (len(s), 2)
    np.testing.assert_allclose(sub.library_size, s.library_size)  # still every gene's total
    adata.raw = ad.AnnData(X=adata.layers["counts"], var=adata.var)  # raw counts in .raw
    raw = Slide.from_anndata(adata, use_raw=True)
    np.testing.assert_allclose(raw.counts, adata.layers["counts"].toarray())
    with pytest.warns(UserWarning, match="not integers"):  # X holds log1p values
        Slide.from_anndata(adata)
    with pytest.raises(ValueError, match="no layers"):
        Slide.from_anndata(adata, layer="spliced")
    with pytest.raises(ValueError, match="genes not found"):
        Slide.from_anndata(adata, genes=["nope"])
    square = _visium()
    square.obs["array_col"] = np.tile(np.arange(8), 6)  # a square grid: no parity pattern
    assert not Slide.from_anndata(square, layer="counts").hexagonal


def test_predict_on_h5ad_keeps_the_slide_for_scanpy(tmp_path):
    train_data = _visium(seed=1)
    slide = Slide.from_anndata(train_data, layer="counts", name="train")
    torch.manual_seed(0)
    model = SpotMLP(BaselineConfig(5, 12, dim=8))
    train(model, [slide], TrainConfig(steps=3, lr=1e-3), progress=False)
    model.save_pretrained(tmp_path / "ckpt")
    query = _visium(seed=2)
    del query.layers["counts"]
    query.X = None  # an H&E-only slide: nothing measured
    path = tmp_path / "query.h5ad"
    query.write_h5ad(path)
    code = main(
        ["predict", "--checkpoint", str(tmp_path / "ckpt"), "--out", str(tmp_path / "pred"),
         "--data", str(path), "--device", "cpu"]
    )  # fmt: skip
    assert code == 0
    out = ad.read_h5ad(tmp_path / "pred" / "query.h5ad")
    assert list(out.var_names) == [f"G{j}" for j in range(12)]  # the model's genes, by name
    assert list(out.obs_names) == list(query.obs_names)
    assert {"array_row", "array_col", "cluster", "lattice_row", "lattice_col"} <= set(out.obs)
    np.testing.assert_array_equal(
        out.uns["spatial"]["lib1"]["images"]["hires"],
        query.uns["spatial"]["lib1"]["images"]["hires"],
    )
    assert out.uns["spatial"]["lib1"]["scalefactors"]["tissue_hires_scalef"] == 0.1
    np.testing.assert_allclose(out.obsm["spatial"], query.obsm["spatial"])
    np.testing.assert_allclose(out.X, np.expm1(out.layers["log1p"]).clip(0), rtol=1e-5)
    assert out.uns["hist"]["target_sum"] == 1e4 and "counts" not in out.layers


def test_predict_on_a_slide_measuring_other_genes():
    slide = Slide.from_anndata(_visium(seed=1), layer="counts")
    torch.manual_seed(0)
    model = SpotMLP(BaselineConfig(5, 12, dim=8))
    train(model, [slide], TrainConfig(steps=2, lr=1e-3), progress=False)
    other = Slide.from_anndata(_visium(seed=3), layer="counts", genes=["G0", "G1"])
    out = predict_anndata(model, other)  # no counts needed: the two measured genes are dropped
    assert out.shape == (len(other), 12) and "counts" not in out.layers
