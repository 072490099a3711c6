"""Real test images for the bundled models, from scikit-image's bundled photographs.

Shared by the registry (``mlts.models``) and by ``generate.py`` (which loads this file by path
in its TensorFlow environment), so a classifier's calibration and its test inputs are made by
the same code. Needs numpy and scikit-image (imported when first used); every image here is in
the scikit-image wheel itself (no download).
"""

from __future__ import annotations

import numpy as np

# Photographs (RGB) first, then gray ones (made RGB by repeating the channel).
SAMPLE_IMAGES = ("astronaut", "chelsea", "coffee", "rocket", "stereo_motorcycle",
                 "hubble_deep_field", "immunohistochemistry", "retina", "colorwheel", "camera",
                 "coins", "moon", "brick", "grass", "gravel", "page", "text", "cell", "clock",
                 "horse")

PIP_HINT = "pip install scikit-image"


def _skimage_data():
    try:
        from skimage import data
    except ImportError as exc:                  # pragma: no cover - depends on the env
        raise ImportError(f"the MLTS test images need scikit-image: {PIP_HINT}") from exc
    return data


def sample_image(name: str) -> np.ndarray:
    """scikit-image sample ``name`` as an HxWx3 uint8 RGB array (gray and boolean images are
    repeated over 3 channels, an alpha channel dropped, a stereo pair's left image taken).

    Raises ValueError for a name that is not a scikit-image sample."""
    data = _skimage_data()
    try:
        img = getattr(data, name)()
    except AttributeError:
        raise ValueError(f"unknown scikit-image sample image {name!r}; "
                         f"known: {', '.join(SAMPLE_IMAGES)}") from None
    img = np.asarray(img[0] if isinstance(img, tuple) else img)
    if img.dtype == bool:
        img = img.astype(np.uint8) * 255
    elif img.dtype != np.uint8:
        img = np.clip(img.astype(np.float64) / max(float(img.max()), 1.0) * 255.0, 0, 255)
        img = img.astype(np.uint8)
    if img.ndim == 2:
        img = np.stack([img] * 3, axis=-1)
    return np.ascontiguousarray(img[..., :3])


def resize(img: np.ndarray, height: int, width: int) -> np.ndarray:
    """Bilinear resize with anti-aliasing (scikit-image), float32 in the input's value range."""
    from skimage.transform import resize as sk_resize
    out = sk_resize(img, (height, width), order=1, anti_aliasing=True, preserve_range=True)
    return out.astype(np.float32)


def center_crop(img: np.ndarray, height: int, width: int,
                box: tuple[int, int, int, int] | None = None) -> np.ndarray:
    """The largest centred crop of ``img`` (or of ``img[y0:y1, x0:x1]`` for ``box`` =
    (y0, x0, y1, x1)) with the aspect ratio of height x width, resized to it: float32
    [height, width, 3] in [0, 255]."""
    if box is not None:
        y0, x0, y1, x1 = box
        img = img[y0:y1, x0:x1]
    h, w = img.shape[:2]
    if h * width > w * height:
        ch, cw = max(1, round(w * height / width)), w
    else:
        ch, cw = h, max(1, round(h * width / height))
    y, x = (h - ch) // 2, (w - cw) // 2
    return resize(img[y:y + ch, x:x + cw], height, width)


def letterbox(img: np.ndarray, height: int, width: int) -> np.ndarray:
    """``img`` scaled to fit height x width keeping its aspect ratio, centred, padded with
    zeros (MediaPipe's keep_aspect_ratio / scale_mode FIT): float32 [height, width, 3] in
    [0, 255]."""
    h, w = img.shape[:2]
    scale = min(height / h, width / w)
    nh, nw = max(1, round(h * scale)), max(1, round(w * scale))
    out = np.zeros((height, width, 3), np.float32)
    y, x = (height - nh) // 2, (width - nw) // 2
    out[y:y + nh, x:x + nw] = resize(img, nh, nw)
    return out


def to_range(pixels: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """[0, 255] pixels linearly mapped to [lo, hi], float32 (MediaPipe's output_range;
    MobileNet's preprocessing is (-1, 1): x / 127.5 - 1)."""
    return (np.asarray(pixels, np.float32) * np.float32((hi - lo) / 255.0)
            + np.float32(lo)).astype(np.float32)


def calibration_crops(size: int, n: int, seed: int = 0) -> np.ndarray:
    """``n`` random square crops (side 40-100% of the shorter edge, random horizontal flip)
    of the sample images in turn, resized to ``size``: float32 [n, size, size, 3] in
    [0, 255]. Deterministic for a given seed."""
    rng = np.random.default_rng(seed)
    images = [sample_image(name) for name in SAMPLE_IMAGES]
    out = np.empty((n, size, size, 3), np.float32)
    for i in range(n):
        img = images[i % len(images)]
        h, w = img.shape[:2]
        side = int(min(h, w) * rng.uniform(0.4, 1.0))
        y = int(rng.integers(0, h - side + 1))
        x = int(rng.integers(0, w - side + 1))
        crop = img[y:y + side, x:x + side]
        if rng.random() < 0.5:
            crop = crop[:, ::-1]
        out[i] = resize(crop, size, size)
    return out
