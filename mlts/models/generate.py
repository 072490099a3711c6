"""Generate the bundled MLTS models with TensorFlow, reproducibly.

This script is NOT imported by nncts: it runs in a side environment that has TensorFlow,
so that users of nncts need no TensorFlow (the generated .tflite files are committed)::

    python3 -m venv /work/tfenv
    /work/tfenv/bin/pip install tensorflow-cpu tf-keras scikit-image
    /work/tfenv/bin/python mlts/models/generate.py            # writes mlts/models/*.tflite
    /work/tfenv/bin/python mlts/models/generate.py --check    # regenerate in memory, compare

Made with tensorflow-cpu 2.21.0, tf-keras 2.21.0, scikit-image 0.26.0, numpy 2.4 (the exact
bytes depend on the converter version; the model functions do not).

Models (see README.md beside this file for the table of files and sizes):

- MobileNet v1 (``keras.applications.MobileNet``, weights=None, 1001 classes like the TF-slim
  checkpoints MLTS ships): 1.0/224 float32; 0.25/128 in float32, float16 weights (TFLite
  float16 quantization: weights stored as FLOAT16 behind DEQUANTIZE), uint8 per-tensor (the
  MLTS ``mobilenet_quantized`` scheme: TENSOR uint8 input, activations, weights and output,
  int32 biases) and int8 per-channel (full integer quantization from a representative set).
- MobileNet v2 0.35/224 (``keras.applications.MobileNetV2``, 100 classes to keep the
  1280-wide head small) in float32 and int8 per-channel.
- A small sequence model (two Keras LSTM layers, batch 1) that converts to TFLite's fused
  UNIDIRECTIONAL_SEQUENCE_LSTM, float32.

Weights: Keras' random initialisers under a fixed seed (no download), then three calibrations
on real images (``images.py``: crops of scikit-image's bundled photographs):

1. BatchNorm statistics. With weights=None the moving statistics are 0/1, so activations grow
   layer by layer and int8 calibration degenerates. Every BatchNorm's momentum is set to 0
   and the model runs once in training mode on 64 random crops: each moving mean/variance
   becomes the batch statistics of that layer's input as the (already calibrated) layers
   before it produce it.
2. BatchNorm offset beta = BN_BETA (1.0): with beta 0 a random ReLU network is chaotic (each
   ReLU + BatchNorm amplifies a relative perturbation by about sqrt(0.5 / 0.34) = 1.2, so
   float16 weights or int8 rounding change the top-1 class); with beta 1 about 16% of the
   ReLU6 inputs are clamped and quantized top-1 agrees with float on every test image.
3. Classifier head: a nearest-prototype classifier. Class 1 + k scores the input's centred
   features against those of the registry's test image k (``images.SAMPLE_IMAGES[k]``,
   centre-cropped; logit PROTOTYPE_LOGIT = 8 for the image itself); the other classes keep
   random directions (logit standard deviation 1). So each test image has a known top-1
   class (astronaut -> 1, chelsea -> 2, ...), the softmax is not flat (a flat softmax
   quantizes to all zeros) and the margin survives quantization.

uint8 per-tensor: the current converter's post-training quantization only makes int8. The
uint8 model is therefore built the way MLTS's mobilenet_quantized was made, as a TF1 graph
with fake-quantization nodes (quantization-aware-training style) converted by
``tf.compat.v1.lite.TFLiteConverter`` with ``inference_type=tf.uint8``: BatchNorm folded into
each convolution's weights and bias, weights fake-quantized per tensor over their [min, max],
ReLU6 outputs over [0, 6], the logits over their calibrated [min, max], the softmax output over
[0, 255/256] (scale 1/256, zero point 0, as TFLite requires), input stats (mean 128, std 128):
scale 1/128, zero point 128. The stride-2 depthwise convolutions use SAME padding (equal to
Keras' explicit ZeroPadding2D((0, 1), (0, 1)) + VALID for even sizes) and the global pooling is
an AVERAGE_POOL_2D, as in the TF-slim graph.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
from pathlib import Path

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")      # Keras 2 (tf-keras): fused LSTM
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402

OUT = Path(__file__).resolve().parent
SEED = 0
BN_BETA = 1.0             # BatchNorm offset: ReLU6 mostly linear (see calibrate_batchnorm)
PROTOTYPE_LOGIT = 8.0
CALIB_IMAGES = 64          # crops for BatchNorm calibration and int8 representative data


def _load_images_module():
    """mlts/models/images.py loaded by path (this script does not import the nncts package)."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("_mlts_images", OUT / "images.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


images = _load_images_module()


def _tf():
    import tensorflow as tf
    return tf


def _keras():
    import tf_keras
    return tf_keras


def preprocess(pixels: np.ndarray) -> np.ndarray:
    """MobileNet preprocessing: [0, 255] -> [-1, 1] (x / 127.5 - 1)."""
    return images.to_range(pixels, -1.0, 1.0)


def calibration_batch(size: int) -> np.ndarray:
    """Preprocessed calibration crops, float32 [CALIB_IMAGES, size, size, 3] in [-1, 1]."""
    return preprocess(images.calibration_crops(size, CALIB_IMAGES, SEED))


def prototype_batch(size: int) -> np.ndarray:
    """The registry's test inputs: each sample image centre-cropped to size x size,
    preprocessed; float32 [len(SAMPLE_IMAGES), size, size, 3]."""
    return np.stack([preprocess(images.center_crop(images.sample_image(name), size, size))
                     for name in images.SAMPLE_IMAGES])


# --------------------------------------------------------------------------------- Keras

def calibrate_batchnorm(model, batch: np.ndarray, beta: float | None = None) -> None:
    """Set every BatchNorm's beta to ``beta`` and its moving mean/variance to the statistics
    of its input on ``batch`` (momentum 0, one forward pass in training mode, where each
    BatchNorm already normalises with the batch statistics that its moving ones become)."""
    keras = _keras()
    beta = BN_BETA if beta is None else beta
    bns = [layer for layer in model.layers if isinstance(layer, keras.layers.BatchNormalization)]
    saved = [layer.momentum for layer in bns]
    for layer in bns:
        layer.momentum = 0.0
        layer.beta.assign(np.full(layer.beta.shape, beta, np.float32))
    model(batch, training=True)
    for layer, momentum in zip(bns, saved):
        layer.momentum = momentum


def calibrate_head(model, head_name: str, batch: np.ndarray, prototypes: np.ndarray) -> None:
    """Make the classifier layer ``head_name`` (Conv2D 1x1 or Dense) a nearest-prototype
    classifier: class 1 + k (k < len(prototypes)) scores the input's centred features against
    prototype k's (logit PROTOTYPE_LOGIT for the prototype itself); the other classes keep
    random directions scaled to logits of standard deviation 1 over ``batch``. Centring uses
    the mean feature of ``batch``."""
    keras = _keras()
    head = model.get_layer(head_name)
    extract = keras.Model(model.input, head.input)
    features = extract(batch, training=False).numpy().reshape(len(batch), -1)
    protos = extract(prototypes, training=False).numpy().reshape(len(prototypes), -1)
    kernel, bias = head.get_weights()
    w = kernel.reshape(features.shape[1], -1).astype(np.float64)
    mean = features.mean(axis=0)
    w = w / ((features - mean) @ w).std()
    d = protos - mean
    w[:, 1:1 + len(protos)] = (PROTOTYPE_LOGIT * d / (d * d).sum(axis=1, keepdims=True)).T
    head.set_weights([w.reshape(kernel.shape).astype(np.float32),
                      (-(mean @ w)).astype(np.float32)])


def _classifier(app, alpha: float, size: int, classes: int, head: str):
    keras = _keras()
    keras.utils.set_random_seed(SEED)
    model = app(weights=None, alpha=alpha, input_shape=(size, size, 3), classes=classes,
                input_tensor=keras.Input((size, size, 3), name="input"))
    batch = calibration_batch(size)
    protos = prototype_batch(size)
    calibrate_batchnorm(model, batch)
    calibrate_head(model, head, batch, protos)
    # Quantization ranges see the calibration crops and the test images (whose prototype
    # logits are the largest ones).
    return model, np.concatenate([batch, protos])


def mobilenet_v1(alpha: float, size: int, classes: int = 1001):
    """Keras MobileNet v1 (random weights, calibrated) and its quantization calibration batch
    (float32 [n, size, size, 3] in [-1, 1])."""
    return _classifier(_keras().applications.MobileNet, alpha, size, classes, "conv_preds")


def mobilenet_v2(alpha: float, size: int, classes: int = 100):
    """Keras MobileNet v2 (random weights, calibrated) and its quantization calibration batch."""
    return _classifier(_keras().applications.MobileNetV2, alpha, size, classes, "predictions")


def lstm_model(steps: int = 16, features: int = 8, units: int = 32, classes: int = 8):
    """Input [1, steps, features] float32 -> LSTM(units, sequences) -> LSTM(units) -> Dense
    softmax [1, classes]. Batch fixed to 1 so the converter emits the fused op."""
    keras = _keras()
    keras.utils.set_random_seed(SEED)
    inp = keras.Input(shape=(steps, features), batch_size=1, name="sequence")
    x = keras.layers.LSTM(units, return_sequences=True)(inp)
    x = keras.layers.LSTM(units)(x)
    out = keras.layers.Dense(classes, activation="softmax")(x)
    return keras.Model(inp, out, name="lstm")


# ----------------------------------------------------------------------------- converters

def _converter(model):
    """A TFLite converter for ``model`` with batch size 1 (static shapes: the Keras Reshape's
    SHAPE/STRIDED_SLICE/PACK of a dynamic batch fold into a constant)."""
    tf = _tf()
    spec = [tf.TensorSpec([1, *t.shape[1:]], t.dtype, name=t.name.split(":")[0])
            for t in model.inputs]
    fn = tf.function(lambda *xs: model(list(xs) if len(xs) > 1 else xs[0], training=False),
                     input_signature=spec)
    return tf.lite.TFLiteConverter.from_concrete_functions([fn.get_concrete_function()], model)


def convert_float(model) -> bytes:
    return _converter(model).convert()


def convert_float16(model) -> bytes:
    tf = _tf()
    conv = _converter(model)
    conv.optimizations = [tf.lite.Optimize.DEFAULT]
    conv.target_spec.supported_types = [tf.float16]
    return conv.convert()


def convert_int8(model, batch: np.ndarray) -> bytes:
    """Full integer quantization: int8 input/output, per-channel int8 weights (the
    converter's default), int32 biases, calibrated on ``batch``."""
    tf = _tf()
    conv = _converter(model)
    conv.optimizations = [tf.lite.Optimize.DEFAULT]

    def representative():
        for i in range(len(batch)):
            yield [batch[i:i + 1]]

    conv.representative_dataset = representative
    conv.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
    conv.inference_input_type = tf.int8
    conv.inference_output_type = tf.int8
    return conv.convert()


def convert_uint8_v1(model, batch: np.ndarray) -> bytes:
    """MobileNet v1 ``model`` as a uint8 per-tensor TFLite model (see the module docstring)."""
    tf = _tf()
    keras = _keras()
    tf1 = tf.compat.v1
    layers = model.layers
    size = model.input_shape[1]
    logits = keras.Model(model.input, model.get_layer("conv_preds").output)(batch).numpy()
    lo, hi = float(min(logits.min(), 0.0)), float(max(logits.max(), 0.0))

    def fq(x, a, b):
        return tf.quantization.fake_quant_with_min_max_args(x, float(a), float(b), num_bits=8)

    def folded(conv_layer, bn_layer):
        """(kernel, bias) with the following BatchNorm folded in (inference statistics)."""
        weights = conv_layer.get_weights()
        kernel = weights[0]
        depthwise = isinstance(conv_layer, keras.layers.DepthwiseConv2D)
        channels = kernel.shape[2] * kernel.shape[3] if depthwise else kernel.shape[3]
        bias = weights[1] if len(weights) > 1 else np.zeros(channels, np.float32)
        if bn_layer is not None:
            gamma, beta, mean, var = bn_layer.get_weights()
            k = gamma / np.sqrt(var + bn_layer.epsilon)
            kernel = kernel * (k.reshape(1, 1, -1, 1) if depthwise else k.reshape(1, 1, 1, -1))
            bias = beta + (bias - mean) * k
        return kernel.astype(np.float32), bias.astype(np.float32)

    # Eager pass: the layer sequence as a plan of (op, arguments) with folded weights.
    plan: list[tuple] = []
    i = 1
    while i < len(layers):
        layer = layers[i]
        if isinstance(layer, (keras.layers.ZeroPadding2D, keras.layers.Dropout)):
            i += 1                          # padding: folded into the next layer's SAME
            continue
        if isinstance(layer, (keras.layers.Conv2D, keras.layers.DepthwiseConv2D)):
            bn = layers[i + 1] if isinstance(layers[i + 1],
                                             keras.layers.BatchNormalization) else None
            kernel, bias = folded(layer, bn)
            i += 2 if bn is not None else 1
            relu = i < len(layers) and isinstance(layers[i], keras.layers.ReLU)
            i += 1 if relu else 0
            plan.append(("depthwise" if isinstance(layer, keras.layers.DepthwiseConv2D)
                         else "conv", kernel, bias, layer.strides[0], relu))
            continue
        if isinstance(layer, keras.layers.GlobalAveragePooling2D):
            plan.append(("avgpool",))
        elif isinstance(layer, keras.layers.Reshape):
            plan.append(("reshape",))
        elif isinstance(layer, keras.layers.Activation):
            plan.append(("softmax",))
        else:
            raise TypeError(f"uint8 MobileNet v1: unexpected layer {layer.name}")
        i += 1

    graph = tf.Graph()
    with graph.as_default():
        x_in = tf1.placeholder(tf.float32, [1, size, size, 3], name="input")
        x = fq(x_in, -1.0, 127.0 / 128.0)
        for step in plan:
            if step[0] in ("conv", "depthwise"):
                _, kernel, bias, strides, relu = step
                w = fq(tf.constant(kernel), min(kernel.min(), 0.0), max(kernel.max(), 0.0))
                if step[0] == "depthwise":
                    y = tf.nn.depthwise_conv2d(x, w, [1, strides, strides, 1], "SAME")
                else:
                    y = tf.nn.conv2d(x, w, strides, "SAME")
                y = tf.nn.bias_add(y, tf.constant(bias))
                x = fq(tf.nn.relu6(y), 0.0, 6.0) if relu else fq(y, lo, hi)   # else: logits
            elif step[0] == "avgpool":
                x = fq(tf.nn.avg_pool2d(x, int(x.shape[1]), 1, "VALID"), 0.0, 6.0)
            elif step[0] == "reshape":
                x = tf.reshape(x, [1, -1])
            else:
                x = fq(tf.nn.softmax(x), 0.0, 255.0 / 256.0)
        out = tf.identity(x, name="MobilenetV1/Predictions/Reshape_1")
        with tf1.Session(graph=graph) as sess:
            conv = tf1.lite.TFLiteConverter.from_session(sess, [x_in], [out])
            conv.inference_type = tf.uint8
            conv.quantized_input_stats = {"input": (128.0, 128.0)}
            return conv.convert()


# ---------------------------------------------------------------------------------- main

def build_all() -> dict[str, bytes]:
    """Every bundled generated model: file name -> TFLite flatbuffer bytes."""
    tf = _tf()
    tf.config.experimental.enable_op_determinism()
    files: dict[str, bytes] = {}

    model, _ = mobilenet_v1(1.0, 224)
    files["mobilenet_v1_1.0_224.tflite"] = convert_float(model)

    model, batch = mobilenet_v1(0.25, 128)
    files["mobilenet_v1_0.25_128.tflite"] = convert_float(model)
    files["mobilenet_v1_0.25_128_fp16.tflite"] = convert_float16(model)
    files["mobilenet_v1_0.25_128_quant_uint8.tflite"] = convert_uint8_v1(model, batch)
    files["mobilenet_v1_0.25_128_quant_int8.tflite"] = convert_int8(model, batch)

    model, batch = mobilenet_v2(0.35, 224)
    files["mobilenet_v2_0.35_224.tflite"] = convert_float(model)
    files["mobilenet_v2_0.35_224_quant_int8.tflite"] = convert_int8(model, batch)

    files["lstm_seq16.tflite"] = convert_float(lstm_model())
    return files


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=OUT, help="output folder (default: here)")
    parser.add_argument("--check", action="store_true",
                        help="do not write: compare regenerated bytes with the files in --out")
    args = parser.parse_args(argv)
    files = build_all()
    status = 0
    for name, data in files.items():
        path = args.out / name
        digest = hashlib.sha256(data).hexdigest()[:16]
        if args.check:
            same = path.exists() and path.read_bytes() == data
            status |= 0 if same else 1
            print(f"{name:45s} {len(data):>10,d} B sha256 {digest} "
                  f"{'identical' if same else 'DIFFERS'}")
        else:
            path.write_bytes(data)
            print(f"{name:45s} {len(data):>10,d} B sha256 {digest}")
    print(f"total {sum(map(len, files.values())):,d} B")
    return status


if __name__ == "__main__":
    sys.exit(main())
