"""sam3h - Python binding of sam3.h (Meta SAM 3 segmentation in C) through ctypes. numpy only.

Install (offline): `make lib` at the top of the repository, then `pip install ./examples/python`
(in a venv made with --system-site-packages where numpy is system-wide, add --no-build-isolation):
the package bundles that build/libsam3.so. The import name is sam3h, so Meta's own `sam3`
package can be installed next to it. The library is, first found: load_library(path), $SAM3_LIB,
the bundled copy, build/libsam3.so of the source tree this file is in, an installed libsam3.

    import numpy as np, sam3h
    with sam3h.Model("weights/sam3.sam3") as model, sam3h.Context(model) as ctx:
        ctx.set_image(rgb)                          # (H, W, 3) uint8
        seg = ctx.segment("yellow school bus")      # seg.masks (N, H, W) bool, seg.boxes (N, 4), seg.scores (N,)
        seg.to_coco(image_id=1)                     # COCO result annotations, masks as compressed RLE
        pts = ctx.segment_points(points=[(320, 200)])  # pts.masks (3, H, W) bool, pts.iou (3,), pts.best

Errors raise sam3h.Error (.code: the sam3_result, e.g. sam3h.ERR_INVALID_ARG; str(): the library's
message), through a subclass that is also the fitting builtin: NotFoundError is a FileNotFoundError,
InvalidArgumentError and FileFormatError are ValueErrors, ArgumentTypeError a TypeError,
OutOfMemoryError a MemoryError (see ERRORS).

Video: a Tracker on a Context follows prompted objects through a stream of frames (sam3_tracker_*):

    with sam3h.Tracker(ctx) as tr:
        tr.add_prompt(0, 1, points=[(320, 200)])    # object 1: a click on frame 0 (the next one)
        for rgb in frames:
            for ob in tr.push_frame(rgb):           # per object: id, object_score, box, area, mask, ...
                print(ob["id"], ob["object_score"] > 0, ob["box"])

Layout: each C object is a Python class holding its pointer (`_ptr`), with close() and `with`
support, its C functions declared in _PROTOTYPES, its calls checked by _check(); options and
results are ctypes mirrors of the C structs (same field names: tests/test_python.py compares their
offsets with the C compiler's), read into numpy arrays right after the call.
"""
import ctypes
import ctypes.util
import os
import weakref

import numpy as np

__all__ = ["Error", "NotFoundError", "FileReadError", "FileFormatError", "InvalidArgumentError", "ArgumentTypeError",
           "ArgumentOverflowError", "OutOfMemoryError", "UnsupportedError", "NoImageError", "AbortedError", "BusyError",
           "Model", "Context", "Concept", "Segmentation", "PointsResult", "Tracker", "mask_to_rle", "version", "load_library"]

API_MAJOR = 1  # the sam3.h major version whose structs this module mirrors

# sam3_result codes (sam3.h SAM3_RESULT_LIST)
OK = 0
TRUNCATED = 1
ERR_INVALID_ARG = -1
ERR_OUT_OF_MEMORY = -2
ERR_IO = -3
ERR_BAD_MAGIC = -4
ERR_BAD_VERSION = -5
ERR_CORRUPT_FILE = -6
ERR_MISSING_TENSOR = -7
ERR_SHAPE_MISMATCH = -8
ERR_UNSUPPORTED = -9
ERR_ABORTED = -10
ERR_NO_IMAGE = -11
ERR_BUSY = -12

RGB8, RGBA8, GRAY8 = 0, 1, 2  # sam3_pixel_format
LOG_ERROR = 0


class Error(Exception):
    """A sam3h call failed: .code is its sam3_result, str() the library's message. Raised as one
    of the subclasses below, each also the builtin exception that fits (catch either)."""

    def __init__(self, code, message):
        super().__init__(message)
        self.code = code


class NotFoundError(Error, FileNotFoundError):
    """The model file does not exist (ERR_IO on a missing path)."""


class FileReadError(Error, OSError):
    """The file exists but cannot be read or mapped (ERR_IO)."""


class FileFormatError(Error, ValueError):
    """The file is not a usable .sam3 file: bad magic or version, corrupt, a tensor missing or misshapen."""


class InvalidArgumentError(Error, ValueError):
    """A bad argument value (ERR_INVALID_ARG): NaN, out of range, too many points, a closed object."""


class ArgumentTypeError(Error, TypeError):
    """An argument of the wrong type, or an array of the wrong dtype or number of dimensions."""


class ArgumentOverflowError(Error, OverflowError):
    """An integer argument that does not fit the C int it goes to."""


class OutOfMemoryError(Error, MemoryError):
    """An allocation failed (ERR_OUT_OF_MEMORY)."""


class UnsupportedError(Error, ValueError):
    """The model (or build) cannot do this (ERR_UNSUPPORTED): text on a SAM 1 file, a tracker
    on a file without memory modules."""


class NoImageError(Error, RuntimeError):
    """A prompt on a context with no image set (ERR_NO_IMAGE)."""


class AbortedError(Error, RuntimeError):
    """The abort callback stopped the call (ERR_ABORTED)."""


class BusyError(Error, RuntimeError):
    """The context is in use by a call on another thread (ERR_BUSY)."""


# sam3_result -> the class raised for it
ERRORS = {ERR_INVALID_ARG: InvalidArgumentError, ERR_OUT_OF_MEMORY: OutOfMemoryError, ERR_IO: FileReadError,
          ERR_BAD_MAGIC: FileFormatError, ERR_BAD_VERSION: FileFormatError, ERR_CORRUPT_FILE: FileFormatError,
          ERR_MISSING_TENSOR: FileFormatError, ERR_SHAPE_MISMATCH: FileFormatError, ERR_UNSUPPORTED: UnsupportedError,
          ERR_ABORTED: AbortedError, ERR_NO_IMAGE: NoImageError, ERR_BUSY: BusyError}


def _error(code, message):
    """The exception for a sam3_result code (Error itself for a code this module does not know)."""
    return ERRORS.get(code, Error)(code, message)


# ---- C structs (sam3.h), field names as in C ----
c_float_p = ctypes.POINTER(ctypes.c_float)
c_uint8_p = ctypes.POINTER(ctypes.c_uint8)
LOG_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int, ctypes.c_char_p)


class _Allocator(ctypes.Structure):
    _fields_ = [("alloc", ctypes.c_void_p), ("free", ctypes.c_void_p), ("user", ctypes.c_void_p)]


class _LoadOptions(ctypes.Structure):
    _fields_ = [("allocator", _Allocator), ("log", LOG_FN), ("log_user", ctypes.c_void_p), ("no_mmap", ctypes.c_int),
                ("verify", ctypes.c_int), ("error", ctypes.c_char_p), ("error_size", ctypes.c_size_t),
                ("image_size", ctypes.c_int)]


class _CtxOptions(ctypes.Structure):
    _fields_ = [("allocator", _Allocator), ("n_threads", ctypes.c_int), ("blas_threads", ctypes.c_int),
                ("abort_fn", ctypes.c_void_p), ("abort_user", ctypes.c_void_p), ("progress_fn", ctypes.c_void_p),
                ("progress_user", ctypes.c_void_p), ("tap", ctypes.c_void_p), ("tap_user", ctypes.c_void_p),
                ("precision", ctypes.c_int), ("isa", ctypes.c_int)]


class _Timings(ctypes.Structure):
    _fields_ = [(n, ctypes.c_double) for n in ("preprocess", "vision_trunk", "vision_neck", "text", "geometry", "detr_encoder",
                                                "detr_decoder", "mask_decoder", "postprocess", "interactive_neck", "points",
                                                "tracking", "everything")]
    # returned by value: room for fields a later sam3.h appends (the callee writes into our buffer)
    _fields_ += [("_reserved", ctypes.c_double * 32)]


class _Box(ctypes.Structure):
    _fields_ = [("x0", ctypes.c_float), ("y0", ctypes.c_float), ("x1", ctypes.c_float), ("y1", ctypes.c_float)]

    def as_array(self):
        return np.array([self.x0, self.y0, self.x1, self.y1], dtype=np.float32)


class _SegmentPrompt(ctypes.Structure):
    _fields_ = [("text", ctypes.c_char_p), ("boxes", ctypes.POINTER(_Box)), ("box_labels", ctypes.POINTER(ctypes.c_int)),
                ("n_boxes", ctypes.c_int), ("concepts", ctypes.POINTER(ctypes.c_void_p)), ("n_concepts", ctypes.c_int)]


class _SegmentOptions(ctypes.Structure):
    _fields_ = [("score_threshold", ctypes.c_float), ("mask_threshold", ctypes.c_float), ("no_masks", ctypes.c_int),
                ("low_res", ctypes.c_int), ("semantic", ctypes.c_int)]


class _Instance(ctypes.Structure):
    _fields_ = [("score", ctypes.c_float), ("box", _Box), ("query", ctypes.c_int), ("area", ctypes.c_int64),
                ("mask", c_uint8_p), ("low_res_logits", c_float_p)]


class _SegmentResult(ctypes.Structure):
    _fields_ = [("n_instances", ctypes.c_int), ("instances", ctypes.POINTER(_Instance)), ("width", ctypes.c_int),
                ("height", ctypes.c_int), ("presence", ctypes.c_float), ("n_queries", ctypes.c_int),
                ("low_res_width", ctypes.c_int), ("low_res_height", ctypes.c_int), ("semantic_logits", c_float_p),
                ("semantic_mask", c_uint8_p), ("n_text_tokens", ctypes.c_int), ("text_truncated", ctypes.c_int)]


class _Point(ctypes.Structure):
    _fields_ = [("x", ctypes.c_float), ("y", ctypes.c_float), ("label", ctypes.c_int)]


class _PointsPrompt(ctypes.Structure):
    _fields_ = [("points", ctypes.POINTER(_Point)), ("n_points", ctypes.c_int), ("box", ctypes.POINTER(_Box)),
                ("mask_logits", c_float_p), ("mask_width", ctypes.c_int), ("mask_height", ctypes.c_int)]


class _PointsOptions(ctypes.Structure):
    _fields_ = [("single_mask", ctypes.c_int), ("mask_threshold", ctypes.c_float), ("no_masks", ctypes.c_int)]


class _PointsResult(ctypes.Structure):
    _fields_ = [("n_masks", ctypes.c_int), ("masks", c_uint8_p), ("iou", c_float_p), ("best", ctypes.c_int),
                ("object_score", ctypes.c_float), ("has_object_score", ctypes.c_int), ("low_res_logits", c_float_p),
                ("low_res_width", ctypes.c_int), ("low_res_height", ctypes.c_int), ("width", ctypes.c_int),
                ("height", ctypes.c_int)]


class _TrackerPrompt(ctypes.Structure):
    _fields_ = [("points", ctypes.POINTER(_Point)), ("n_points", ctypes.c_int), ("box", ctypes.POINTER(_Box)), ("mask", c_uint8_p),
                ("mask_width", ctypes.c_int), ("mask_height", ctypes.c_int)]


class _TrackerOptions(ctypes.Structure):
    _fields_ = [("no_masks", ctypes.c_int), ("mask_threshold", ctypes.c_float)]


class _TrackerObject(ctypes.Structure):
    _fields_ = [("id", ctypes.c_int), ("object_score", ctypes.c_float), ("prompted", ctypes.c_int), ("box", _Box),
                ("area", ctypes.c_int64), ("mask", c_uint8_p), ("low_res_logits", c_float_p)]


class _TrackerResult(ctypes.Structure):
    _fields_ = [("frame", ctypes.c_int), ("n_objects", ctypes.c_int), ("objects", ctypes.POINTER(_TrackerObject)),
                ("width", ctypes.c_int), ("height", ctypes.c_int), ("low_res_width", ctypes.c_int), ("low_res_height", ctypes.c_int)]


class _EverythingOptions(ctypes.Structure):
    _fields_ = [("points_per_side", ctypes.c_int), ("pred_iou_thresh", ctypes.c_float), ("stability_score_thresh", ctypes.c_float),
                ("stability_score_offset", ctypes.c_float), ("box_nms_thresh", ctypes.c_float), ("mask_threshold", ctypes.c_float),
                ("crop_layers", ctypes.c_int), ("crop_overlap_ratio", ctypes.c_double), ("crop_points_downscale", ctypes.c_int),
                ("crop_nms_thresh", ctypes.c_float), ("min_region_area", ctypes.c_int64), ("pixels", c_uint8_p),
                ("stride", ctypes.c_int), ("format", ctypes.c_int)]


class _EverythingMask(ctypes.Structure):
    _fields_ = [("mask", c_uint8_p), ("box", _Box), ("area", ctypes.c_int64), ("iou", ctypes.c_float), ("stability", ctypes.c_float),
                ("point", _Point), ("click", ctypes.c_int), ("token", ctypes.c_int), ("crop", ctypes.c_int)]


class _EverythingResult(ctypes.Structure):
    _fields_ = [("n_masks", ctypes.c_int), ("masks", ctypes.POINTER(_EverythingMask)), ("n_points", ctypes.c_int),
                ("n_candidates", ctypes.c_int), ("n_filtered", ctypes.c_int), ("width", ctypes.c_int), ("height", ctypes.c_int),
                ("n_crops", ctypes.c_int)]


# C structs mirrored here, with their C names (tests/test_python.py checks the layouts)
C_STRUCTS = {"sam3_allocator": _Allocator, "sam3_load_options": _LoadOptions, "sam3_ctx_options": _CtxOptions,
             "sam3_timings": _Timings, "sam3_box": _Box, "sam3_segment_prompt": _SegmentPrompt, "sam3_segment_options": _SegmentOptions,
             "sam3_instance": _Instance, "sam3_segment_result": _SegmentResult, "sam3_point": _Point,
             "sam3_points_prompt": _PointsPrompt, "sam3_points_options": _PointsOptions,
             "sam3_points_result": _PointsResult, "sam3_tracker_prompt": _TrackerPrompt,
             "sam3_tracker_options": _TrackerOptions, "sam3_tracker_object": _TrackerObject, "sam3_tracker_result": _TrackerResult,
             "sam3_everything_options": _EverythingOptions, "sam3_everything_mask": _EverythingMask,
             "sam3_everything_result": _EverythingResult}


def _zeroed(cls):
    """A zeroed struct in a buffer 256 bytes longer than ours: zero means "default" for every options
    field, so fields a later sam3.h appends read as defaults, and results it grows have room."""
    return cls.from_buffer(bytearray(ctypes.sizeof(cls) + 256))


# ---- the library ----
_P = ctypes.POINTER
_vp = ctypes.c_void_p
_PROTOTYPES = {
    # name: (restype, argtypes)
    "sam3_version": (ctypes.c_int, []),
    "sam3_version_string": (ctypes.c_char_p, []),
    "sam3_result_string": (ctypes.c_char_p, [ctypes.c_int]),
    "sam3_load": (ctypes.c_int, [ctypes.c_char_p, _P(_LoadOptions), _P(_vp)]),
    "sam3_free": (None, [_vp]),
    "sam3_model_image_size": (ctypes.c_int, [_vp]),
    "sam3_model_arch": (ctypes.c_char_p, [_vp]),
    "sam3_model_has_text": (ctypes.c_int, [_vp]),
    "sam3_model_has_points": (ctypes.c_int, [_vp]),
    "sam3_model_config_int": (ctypes.c_int, [_vp, ctypes.c_char_p, _P(ctypes.c_int64)]),
    "sam3_tokenize": (ctypes.c_int, [_vp, ctypes.c_char_p, _P(ctypes.c_int32), ctypes.c_int, _P(ctypes.c_int)]),
    "sam3_ctx_new": (ctypes.c_int, [_vp, _P(_CtxOptions), _P(_vp)]),
    "sam3_ctx_free": (None, [_vp]),
    "sam3_ctx_last_error": (ctypes.c_char_p, [_vp]),
    "sam3_ctx_timings": (_Timings, [_vp]),
    "sam3_set_image": (ctypes.c_int, [_vp, _P(ctypes.c_uint8), ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int]),
    "sam3_segment": (ctypes.c_int, [_vp, _P(_SegmentPrompt), _P(_SegmentOptions), _P(_SegmentResult)]),
    "sam3_segment_points": (ctypes.c_int, [_vp, _P(_PointsPrompt), _P(_PointsOptions), _P(_PointsResult)]),
    "sam3_segment_many": (ctypes.c_int, [_vp, _P(_SegmentPrompt), ctypes.c_int, _P(_SegmentOptions), _P(_SegmentResult)]),
    "sam3_segment_everything": (ctypes.c_int, [_vp, _P(_EverythingOptions), _P(_EverythingResult)]),
    "sam3_concept_new": (ctypes.c_int, [_vp, _P(_SegmentPrompt), _P(_vp)]),
    "sam3_concept_save": (ctypes.c_int, [_vp, _vp, ctypes.c_size_t, _P(ctypes.c_size_t)]),
    "sam3_concept_load": (ctypes.c_int, [_vp, ctypes.c_char_p, ctypes.c_size_t, _P(_vp), ctypes.c_char_p, ctypes.c_size_t]),
    "sam3_concept_n_tokens": (ctypes.c_int, [_vp, _P(ctypes.c_int)]),
    "sam3_concept_free": (None, [_vp]),
    "sam3_tracker_new": (ctypes.c_int, [_vp, _P(_TrackerOptions), _P(_vp)]),
    "sam3_tracker_add_prompt": (ctypes.c_int, [_vp, ctypes.c_int, ctypes.c_int, _P(_TrackerPrompt)]),
    "sam3_tracker_remove_object": (ctypes.c_int, [_vp, ctypes.c_int]),
    "sam3_tracker_next_frame": (ctypes.c_int, [_vp]),
    "sam3_tracker_push_frame": (ctypes.c_int, [_vp, _P(ctypes.c_uint8), ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                                                _P(_TrackerResult)]),
    "sam3_tracker_reset": (None, [_vp]),
    "sam3_tracker_memory_used": (ctypes.c_size_t, [_vp]),
    "sam3_tracker_free": (None, [_vp]),
    "sam3_mask_to_rle": (ctypes.c_int, [_P(ctypes.c_uint8), ctypes.c_int, ctypes.c_int, ctypes.c_char_p, ctypes.c_size_t,
                                        _P(ctypes.c_size_t)]),
}
_lib = None


def load_library(path=None):
    """Loads libsam3 (once): `path`, else $SAM3_LIB, else the copy bundled by `pip install`, else
    build/libsam3.so of the source tree this file is in, else an installed libsam3
    (ctypes.util.find_library)."""
    global _lib
    if _lib is not None and path is None:
        return _lib
    here = os.path.dirname(os.path.abspath(__file__))
    candidates = [path, os.environ.get("SAM3_LIB"), os.path.join(here, "libsam3.so"),
                  os.path.join(here, "..", "..", "..", "build", "libsam3.so"), ctypes.util.find_library("sam3")]
    tried = []
    for c in candidates:
        if not c or (os.sep in c and not os.path.exists(c)):
            if c:
                tried.append(c)
            continue
        lib = ctypes.CDLL(c)
        # the structs above mirror sam3.h 1.x; the library says which it is (sam3.h, section 8)
        major = lib.sam3_version() // 10000 if hasattr(lib, "sam3_version") else 0
        if major != API_MAJOR:
            raise OSError("sam3h: %s is libsam3 major version %d; this binding needs %d" % (c, major, API_MAJOR))
        for name, (res, args) in _PROTOTYPES.items():
            f = getattr(lib, name)
            f.restype, f.argtypes = res, args
        _lib = lib
        return lib
    raise OSError("sam3h: libsam3 not found (tried %s): run `make lib`, or set SAM3_LIB" % (", ".join(tried) or "nothing"))


def version():
    """The library's version string, e.g. "1.0.0"."""
    return load_library().sam3_version_string().decode()


def _result_string(code):
    return load_library().sam3_result_string(code).decode()


def _check(rc, ctx_ptr=None, what=""):
    """rc < 0: raises rc's Error subclass (ERRORS) with the context's message (or the code's name).
    Returns rc (OK or a note)."""
    if rc >= 0:
        return rc
    msg = load_library().sam3_ctx_last_error(ctx_ptr).decode("utf-8", "replace") if ctx_ptr else ""
    raise _error(rc, "%s%s" % (what + ": " if what else "", msg or _result_string(rc)))


def _text(s):
    if s is not None and not isinstance(s, str):
        raise ArgumentTypeError(ERR_INVALID_ARG, "sam3: the text must be a str or None, not %s" % type(s).__name__)
    return None if s is None else s.encode("utf-8")


# Every argument is checked here, before C sees it: ctypes would wrap an int wider than 32 bits
# (frame 2**32 would be frame 0) and pass a NaN threshold through (every query kept).
_FLT_MAX = float(np.finfo(np.float32).max)


def _int32(v, name):
    """v as a C int: a TypeError when it is not an integer, an OverflowError when it needs more than 32 bits."""
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
        raise ArgumentTypeError(ERR_INVALID_ARG, "sam3: %s must be an int, not %s" % (name, type(v).__name__))
    v = int(v)
    if not -2**31 <= v < 2**31:
        raise ArgumentOverflowError(ERR_INVALID_ARG, "sam3: %s = %d does not fit a 32-bit int" % (name, v))
    return v


def _real(v, name):
    """v as a C float: a TypeError when it is not a number, a ValueError when NaN, infinite or beyond float32."""
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.integer, np.floating)):
        raise ArgumentTypeError(ERR_INVALID_ARG, "sam3: %s must be a number, not %s" % (name, type(v).__name__))
    f = float(v)
    if not abs(f) <= _FLT_MAX:
        raise InvalidArgumentError(ERR_INVALID_ARG, "sam3: %s must be a finite number, got %r" % (name, v))
    return f


class _Handle:
    """Owns one C object (_ptr): close() frees it once, through the C function named _free; `with`
    and garbage collection close it too."""
    _free = _what = ""

    def close(self):
        if getattr(self, "_ptr", None):
            getattr(load_library(), self._free)(self._ptr)
            self._ptr = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        self.close()

    def _live(self):
        if not getattr(self, "_ptr", None):
            raise InvalidArgumentError(ERR_INVALID_ARG, "sam3: the %s is closed" % self._what)
        return self._ptr


class Model(_Handle):
    """A .sam3 file, loaded (mapped) and validated. Read-only: any number of Contexts may share it.
    image_size: SAM 3's square input side, a multiple of the patch (14); 0 = the file's. close() frees
    it, after every Context on it is closed."""
    _free, _what = "sam3_free", "model"

    def __init__(self, path, no_mmap=False, image_size=0):
        lib = load_library()
        errors = []

        def log(_user, level, msg):
            if level == LOG_ERROR and not errors:
                errors.append(msg.decode("utf-8", "replace"))

        opt = _zeroed(_LoadOptions)
        opt.log = LOG_FN(log)  # kept alive by `opt` during the call
        opt.no_mmap = 1 if no_mmap else 0
        opt.image_size = int(image_size)
        ptr = _vp()
        rc = lib.sam3_load(os.fsencode(path), opt, ctypes.byref(ptr))
        if rc < 0:
            msg = errors[0] if errors else "sam3_load: %s" % _result_string(rc)
            if rc == ERR_IO and not os.path.exists(path):
                raise NotFoundError(rc, msg)
            raise _error(rc, msg)
        self._ptr = ptr

    @property
    def image_size(self):
        return load_library().sam3_model_image_size(self._live())

    @property
    def arch(self):
        return load_library().sam3_model_arch(self._live()).decode()

    @property
    def has_text(self):
        return bool(load_library().sam3_model_has_text(self._live()))

    @property
    def has_points(self):
        return bool(load_library().sam3_model_has_points(self._live()))

    def config_int(self, key):
        v = ctypes.c_int64()
        if not isinstance(key, str):
            raise ArgumentTypeError(ERR_INVALID_ARG, "sam3: a config key is a str, not %s" % type(key).__name__)
        if not load_library().sam3_model_config_int(self._live(), key.encode(), ctypes.byref(v)):
            raise KeyError(key)
        return v.value

    def tokenize(self, text):
        """CLIP token ids of text (BOS and EOS included), as a list."""
        ids = (ctypes.c_int32 * 4096)()
        n = ctypes.c_int()
        rc = load_library().sam3_tokenize(self._live(), _text(text), ids, 4096, ctypes.byref(n))
        _check(rc, None, "sam3_tokenize")
        return list(ids[: n.value])


def mask_to_rle(mask):
    """A (H, W) mask (non-zero = set) as COCO compressed RLE, through sam3_mask_to_rle: the str that
    pycocotools' mask.encode(np.asfortranarray(mask))["counts"] gives (as bytes)."""
    a = np.asarray(mask)
    if a.dtype.kind not in "biuf" or a.ndim != 2:
        raise ArgumentTypeError(ERR_INVALID_ARG, "sam3: a mask is a 2-D array of numbers or bools, got %s %s" % (a.dtype, a.shape))
    m = np.ascontiguousarray(a != 0, dtype=np.uint8)
    h, w = _int32(m.shape[0], "mask height"), _int32(m.shape[1], "mask width")
    lib, n = load_library(), ctypes.c_size_t()
    px = m.ctypes.data_as(c_uint8_p)
    _check(lib.sam3_mask_to_rle(px, w, h, None, 0, ctypes.byref(n)), None, "sam3_mask_to_rle")
    buf = ctypes.create_string_buffer(n.value + 1)
    _check(lib.sam3_mask_to_rle(px, w, h, buf, n.value + 1, ctypes.byref(n)), None, "sam3_mask_to_rle")
    return buf.value.decode("ascii")


class Segmentation:
    """sam3 segment's result, in query order: masks (N, H, W) bool, boxes (N, 4) float32 x0 y0 x1 y1 in
    image pixels, scores (N,) float32, queries (N,) int, areas (N,) int64, presence float, and
    text_truncated (the prompt was cut to the model's context); height, width: the image's."""

    def __init__(self, seg, with_masks):
        n, h, w = seg.n_instances, seg.height, seg.width
        self.height, self.width = h, w
        self.scores = np.array([seg.instances[i].score for i in range(n)], dtype=np.float32)
        self.boxes = np.array([seg.instances[i].box.as_array() for i in range(n)], dtype=np.float32).reshape(n, 4)
        self.queries = np.array([seg.instances[i].query for i in range(n)], dtype=np.int32)
        self.areas = np.array([seg.instances[i].area for i in range(n)], dtype=np.int64)
        self.masks = None
        if with_masks:
            self.masks = np.zeros((n, h, w), dtype=bool)
            for i in range(n):
                self.masks[i] = np.ctypeslib.as_array(seg.instances[i].mask, shape=(h, w)) != 0
        self.presence = float(seg.presence)
        self.n_queries = seg.n_queries
        self.text_truncated = bool(seg.text_truncated)

    def __len__(self):
        return len(self.scores)

    def rle(self):
        """Each mask as COCO compressed RLE: a list of N "counts" strings (see mask_to_rle)."""
        if self.masks is None:
            raise InvalidArgumentError(ERR_INVALID_ARG, "sam3: no masks to encode (segment was called with masks=False)")
        return [mask_to_rle(m) for m in self.masks]

    def to_coco(self, image_id, category_id=1):
        """The instances as COCO result annotations (dicts, json-ready) of image `image_id`, with the
        fields of the CLI's --format coco: image_id, category_id, bbox [x, y, width, height] from the
        model's box, area (mask pixels), score, iscrowd 0, segmentation {"size": [H, W], "counts":
        RLE string}."""
        return [{"image_id": image_id, "category_id": category_id,
                 "bbox": [float(x0), float(y0), float(x1 - x0), float(y1 - y0)], "area": int(area), "score": float(score),
                 "iscrowd": 0, "segmentation": {"size": [self.height, self.width], "counts": counts}}
                for (x0, y0, x1, y1), area, score, counts in zip(self.boxes, self.areas, self.scores, self.rle())]


class PointsResult:
    """sam3 segment_points's result: masks (K, H, W) bool, iou (K,) float32 (predicted IoU), best (index
    of the highest), object_score (logit; None for SAM 1 files), low_res_logits (K, h, w) float32 (give
    one back as mask_logits with the next click to refine)."""

    def __init__(self, r, with_masks):
        k, h, w = r.n_masks, r.height, r.width
        self.iou = np.ctypeslib.as_array(r.iou, shape=(k,)).copy() if k else np.zeros(0, np.float32)
        self.best = r.best
        self.object_score = float(r.object_score) if r.has_object_score else None
        self.masks = np.ctypeslib.as_array(r.masks, shape=(k, h, w)) != 0 if with_masks and k else None
        lh, lw = r.low_res_height, r.low_res_width
        self.low_res_logits = np.ctypeslib.as_array(r.low_res_logits, shape=(k, lh, lw)).copy() if k else None

    def __len__(self):
        return len(self.iou)


class Everything:
    """sam3 everything's result, highest predicted IoU first: masks (N, H, W) bool, boxes (N, 4) float32
    (each mask's first and last pixel column and row), areas (N,) int64, iou (N,) and stability (N,)
    float32, points (N, 2) float32 (the grid click that gave it), clicks (N,), tokens (N,) and crops (N,)
    int (0: the whole image; clicks index that crop's grid); and n_points, n_candidates, n_filtered
    (the grids, their masks before any filter, those passing the IoU and stability filters before
    NMS), n_crops."""

    def __init__(self, r):
        n, h, w = r.n_masks, r.height, r.width
        ms = [r.masks[i] for i in range(n)]
        self.height, self.width = h, w
        self.boxes = np.array([m.box.as_array() for m in ms], dtype=np.float32).reshape(n, 4)
        self.areas = np.array([m.area for m in ms], dtype=np.int64)
        self.iou = np.array([m.iou for m in ms], dtype=np.float32)
        self.stability = np.array([m.stability for m in ms], dtype=np.float32)
        self.points = np.array([(m.point.x, m.point.y) for m in ms], dtype=np.float32).reshape(n, 2)
        self.clicks = np.array([m.click for m in ms], dtype=np.int32)
        self.tokens = np.array([m.token for m in ms], dtype=np.int32)
        self.crops = np.array([m.crop for m in ms], dtype=np.int32)
        self.masks = np.zeros((n, h, w), dtype=bool)
        for i, m in enumerate(ms):
            self.masks[i] = np.ctypeslib.as_array(m.mask, shape=(h, w)) != 0
        self.n_points, self.n_candidates, self.n_filtered, self.n_crops = r.n_points, r.n_candidates, r.n_filtered, r.n_crops

    def __len__(self):
        return len(self.iou)


def _as_image(image):
    """(H, W, 3) RGB, (H, W, 4) RGBA or (H, W) grey uint8 -> contiguous array, format."""
    if not isinstance(image, np.ndarray):
        raise ArgumentTypeError(ERR_INVALID_ARG, "sam3: the image must be a numpy uint8 array, not %s" % type(image).__name__)
    a = np.ascontiguousarray(image)
    if a.dtype != np.uint8:
        raise ArgumentTypeError(ERR_INVALID_ARG, "sam3: the image must be uint8, got %s" % a.dtype)
    if a.ndim == 2:
        return a, GRAY8
    if a.ndim == 3 and a.shape[2] in (3, 4):
        return a, RGB8 if a.shape[2] == 3 else RGBA8
    raise ArgumentTypeError(ERR_INVALID_ARG, "sam3: the image must be (H, W, 3), (H, W, 4) or (H, W), got %s" % (a.shape,))


def _float_rows(x, width, what):
    try:
        a = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError):
        raise ArgumentTypeError(ERR_INVALID_ARG, "sam3: %s must be numbers, shaped (N, %d)" % (what, width)) from None
    if a.size and not (np.abs(a) <= _FLT_MAX).all():
        raise InvalidArgumentError(ERR_INVALID_ARG, "sam3: %s must be finite numbers (no NaN or infinity)" % what)
    if a.size == 0:
        return a.reshape(0, width)
    a = a.reshape(-1, width) if a.ndim == 1 and a.size == width else a
    if a.ndim != 2 or a.shape[1] != width:
        raise ArgumentTypeError(ERR_INVALID_ARG, "sam3: %s must be (N, %d), got %s" % (what, width, a.shape))
    return a


def _box_arg(box):
    """A pointer to a sam3_box from (x0, y0, x1, y1), or None; the caller keeps it alive for the call."""
    if box is None:
        return None
    return ctypes.pointer(_Box(*[float(v) for v in _float_rows(box, 4, "box")[0]]))


def _points_arg(points, labels):
    """A sam3_point array from clicks ((N, 2) x y) and their labels (default all 1), and N; the
    caller keeps the array alive for the call (it has room for one point even when N is 0)."""
    p = _float_rows([] if points is None else points, 2, "points")
    cp = (_Point * max(1, len(p)))()
    for i, (row, l) in enumerate(zip(p, _labels(labels, len(p), "point"))):
        cp[i] = _Point(row[0], row[1], l)
    return cp, len(p)


def _labels(labels, n, what):
    if labels is None:
        return [1] * n
    lab = [_int32(v, what + " label") for v in np.asarray(labels).reshape(-1).tolist()]
    if len(lab) != n:
        raise InvalidArgumentError(ERR_INVALID_ARG, "sam3: %d %s labels for %d %s" % (len(lab), what, n, what))
    return lab


def _segment_prompt(text, boxes, box_labels, concepts):
    """A sam3_segment_prompt; the arrays it points to hang on it (pr._keep) for the call."""
    b = _float_rows([] if boxes is None else boxes, 4, "boxes")
    lab = _labels(box_labels, len(b), "box")
    cb = (_Box * max(1, len(b)))()
    cl = (ctypes.c_int * max(1, len(b)))()
    for i, (row, l) in enumerate(zip(b, lab)):
        cb[i] = _Box(row[0], row[1], row[2], row[3])
        cl[i] = l
    concepts = list(concepts or ())
    for k in concepts:
        if not isinstance(k, Concept):
            raise ArgumentTypeError(ERR_INVALID_ARG, "sam3: concepts wants Concept objects, not %s" % type(k).__name__)
    ck = (_vp * max(1, len(concepts)))(*[k._live() for k in concepts])
    pr = _zeroed(_SegmentPrompt)
    pr.text = _text(text)
    pr.boxes = cb if len(b) else None
    pr.box_labels = cl if len(b) else None
    pr.n_boxes = len(b)
    pr.concepts = ck if concepts else None
    pr.n_concepts = len(concepts)
    pr._keep = (cb, cl, ck)
    return pr


class Concept(_Handle):
    """A prompt made once (Context.concept) and reused: its text features and its boxes' tokens
    from the image they were drawn on, with the model's fingerprint. to_bytes() / from_bytes()
    save and load it; a concept of another model is refused (InvalidArgumentError)."""
    _free, _what = "sam3_concept_free", "concept"

    def __init__(self, model, ptr):
        self.model = model
        self._ptr = ptr

    @classmethod
    def from_bytes(cls, model, data):
        data = bytes(data)
        err = ctypes.create_string_buffer(256)
        ptr = _vp()
        rc = load_library().sam3_concept_load(model._live(), data, len(data), ctypes.byref(ptr), err, len(err))
        if rc < 0:
            raise _error(rc, err.value.decode("utf-8", "replace") or _result_string(rc))
        return cls(model, ptr)

    def to_bytes(self):
        lib, n = load_library(), ctypes.c_size_t()
        _check(lib.sam3_concept_save(self._live(), None, 0, ctypes.byref(n)), what="sam3_concept_save")
        buf = ctypes.create_string_buffer(n.value)
        _check(lib.sam3_concept_save(self._ptr, buf, n.value, ctypes.byref(n)), what="sam3_concept_save")
        return buf.raw[:n.value]

    @property
    def n_tokens(self):
        """(tokens, of them text tokens)."""
        nt = ctypes.c_int()
        n = load_library().sam3_concept_n_tokens(self._live(), ctypes.byref(nt))
        return n, nt.value


class Context(_Handle):
    """Per-thread state on a Model: the cached image features, scratch memory and results. One
    thread at a time; any number of Contexts may run at once."""
    _free, _what = "sam3_ctx_free", "context"

    def __init__(self, model, n_threads=0, blas_threads=1, precision="f32"):
        """n_threads: sam3's own threads (0: all cores). blas_threads: as sam3_ctx_options (1, as the
        CLI: the BLAS single-threaded inside sam3's split products, one thread pool; 0: the BLAS's
        threading left as it is; > 1: OpenBLAS's own threads, process-global).
        precision: "f32" or "bf16" (products with weights in bf16; a --dtype bf16 file's are anyway)."""
        if not isinstance(model, Model):
            raise ArgumentTypeError(ERR_INVALID_ARG, "sam3: Context wants a Model, not %s" % type(model).__name__)
        self.model = model  # kept alive as long as the context
        opt = _zeroed(_CtxOptions)
        opt.n_threads, opt.blas_threads = _int32(n_threads, "n_threads"), _int32(blas_threads, "blas_threads")
        if precision not in ("f32", "bf16"):
            raise InvalidArgumentError(ERR_INVALID_ARG, "sam3: precision must be 'f32' or 'bf16', not %r" % (precision,))
        opt.precision = 1 if precision == "bf16" else 0
        ptr = _vp()
        rc = load_library().sam3_ctx_new(model._live(), opt, ctypes.byref(ptr))
        if rc < 0:
            raise _error(rc, "sam3_ctx_new: %s" % _result_string(rc))
        self._ptr = ptr
        self.width = self.height = 0

    def close(self):
        for t in list(getattr(self, "_trackers", ())):  # a C tracker is freed before its context
            t.close()
        super().close()

    def _live(self):
        ptr = super()._live()
        if not self.model._ptr:  # the C context points into the model's weights
            raise InvalidArgumentError(ERR_INVALID_ARG, "sam3: the context's model is closed")
        return ptr

    def set_image(self, image):
        """Runs the image encoder on image ((H, W, 3) RGB uint8; RGBA and grey also) and keeps its features."""
        a, fmt = _as_image(image)
        h, w = a.shape[:2]
        self._image = None
        rc = load_library().sam3_set_image(self._live(), a.ctypes.data_as(c_uint8_p), w, h, a.strides[0], fmt)
        _check(rc, self._ptr)
        self.width, self.height = w, h
        self._image = (a, fmt)  # everything's crop layers encode crops of it (the context keeps only features)

    def segment(self, text=None, boxes=None, box_labels=None, score_threshold=0.5, mask_threshold=0.5, masks=True, concepts=()):
        """Every instance of a concept: a text, exemplar boxes ((N, 4) x0 y0 x1 y1 in image pixels,
        box_labels 1 positive / 0 negative, default all 1), saved Concepts (of this model), or some
        of them. Keeps instances scoring above score_threshold (0 or less: every query);
        mask_threshold is a probability (0: every pixel)."""
        pr = _segment_prompt(text, boxes, box_labels, concepts)
        opt = _zeroed(_SegmentOptions)
        # the library reads 0 as "the default"; every probability is above -1
        score_threshold, mask_threshold = _real(score_threshold, "score_threshold"), _real(mask_threshold, "mask_threshold")
        opt.score_threshold = score_threshold if score_threshold > 0 else -1.0
        opt.mask_threshold = mask_threshold if mask_threshold > 0 else -1.0
        opt.no_masks = 0 if masks else 1
        out = _zeroed(_SegmentResult)
        _check(load_library().sam3_segment(self._live(), pr, opt, out), self._ptr)
        return Segmentation(out, masks)

    def segment_many(self, prompts, score_threshold=0.5, mask_threshold=0.5, masks=True):
        """Several prompts on the image in one call (sam3_segment_many), each result as segment's with
        that prompt alone. A prompt is a text, a Concept, or a dict of segment's text, boxes,
        box_labels and concepts. Returns a list of Segmentation, in the prompts' order."""
        prompts = list(prompts)
        if not prompts:
            raise InvalidArgumentError(ERR_INVALID_ARG, "sam3: segment_many wants at least one prompt")
        built = []
        for p in prompts:
            if isinstance(p, Concept):
                p = {"concepts": [p]}
            elif p is None or isinstance(p, (str, bytes)):
                p = {"text": p}
            if not isinstance(p, dict) or set(p) - {"text", "boxes", "box_labels", "concepts"}:
                raise ArgumentTypeError(ERR_INVALID_ARG, "sam3: a prompt is a text, a Concept or a dict of text, boxes, box_labels, concepts")
            built.append(_segment_prompt(p.get("text"), p.get("boxes"), p.get("box_labels"), p.get("concepts", ())))
        prs = (_SegmentPrompt * len(built))()
        for i, pr in enumerate(built):
            ctypes.memmove(ctypes.byref(prs[i]), ctypes.byref(pr), ctypes.sizeof(_SegmentPrompt))
        opt = _zeroed(_SegmentOptions)
        score_threshold, mask_threshold = _real(score_threshold, "score_threshold"), _real(mask_threshold, "mask_threshold")
        opt.score_threshold = score_threshold if score_threshold > 0 else -1.0
        opt.mask_threshold = mask_threshold if mask_threshold > 0 else -1.0
        opt.no_masks = 0 if masks else 1
        out = (_SegmentResult * len(built))()
        _check(load_library().sam3_segment_many(self._live(), prs, len(built), opt, out), self._ptr)
        return [Segmentation(out[i], masks) for i in range(len(built))]

    def everything(self, points_per_side=32, pred_iou_thresh=0.88, stability_score_thresh=0.95, stability_score_offset=1.0,
                   box_nms_thresh=0.7, mask_threshold=0.5, crop_layers=0, crop_overlap_ratio=512 / 1500,
                   crop_points_downscale=1, crop_nms_thresh=0.7, min_region_area=0):
        """Every object without a prompt (sam3_segment_everything: SAM's automatic mask generator, the
        defaults of transformers' pipeline("mask-generation")). A threshold of 0 or less turns its
        filter off; box_nms_thresh 1 keeps every mask; mask_threshold is a probability. crop_layers > 0
        also runs the grid on 2^i x 2^i overlapping crops of the set_image image (each encoded: one
        image encoder run a crop), points_per_side / crop_points_downscale^i a side, merged by box NMS
        at crop_nms_thresh; min_region_area > 0 fills holes and drops islands under that many pixels
        (SAM's postprocess_small_regions)."""
        opt = _zeroed(_EverythingOptions)
        opt.crop_layers = _int32(crop_layers, "crop_layers")
        opt.crop_points_downscale = _int32(crop_points_downscale, "crop_points_downscale")
        opt.crop_overlap_ratio = _real(crop_overlap_ratio, "crop_overlap_ratio")
        if opt.crop_overlap_ratio == 0:  # 0 would read as the default: any overlap under a pixel is none
            opt.crop_overlap_ratio = 1e-9
        opt.crop_nms_thresh = _real(crop_nms_thresh, "crop_nms_thresh")
        if not opt.crop_nms_thresh > 0:
            raise InvalidArgumentError(ERR_INVALID_ARG, "sam3: crop_nms_thresh must be above 0, not %g" % opt.crop_nms_thresh)
        area = _int32(min_region_area, "min_region_area")
        if area < 0:
            raise InvalidArgumentError(ERR_INVALID_ARG, "sam3: min_region_area must be >= 0, not %d" % area)
        opt.min_region_area = area
        img = getattr(self, "_image", None)
        if opt.crop_layers and img is not None:
            a, fmt = img
            opt.pixels, opt.stride, opt.format = a.ctypes.data_as(c_uint8_p), a.strides[0], fmt
        opt.points_per_side = _int32(points_per_side, "points_per_side")
        if opt.points_per_side < 1:
            raise InvalidArgumentError(ERR_INVALID_ARG, "sam3: points_per_side must be at least 1, not %d" % opt.points_per_side)
        for name, v in (("pred_iou_thresh", pred_iou_thresh), ("stability_score_thresh", stability_score_thresh),
                        ("mask_threshold", mask_threshold)):
            v = _real(v, name)
            setattr(opt, name, v if v > 0 else -1.0)  # the library reads 0 as "the default"
        for name, v in (("stability_score_offset", stability_score_offset), ("box_nms_thresh", box_nms_thresh)):
            v = _real(v, name)
            if not v > 0:  # 0 would read as the default
                raise InvalidArgumentError(ERR_INVALID_ARG, "sam3: %s must be above 0, not %g" % (name, v))
            setattr(opt, name, v)
        out = _zeroed(_EverythingResult)
        _check(load_library().sam3_segment_everything(self._live(), opt, out), self._ptr)
        return Everything(out)

    def concept(self, text=None, boxes=None, box_labels=None):
        """The prompt's Concept on the current image (its boxes' tokens from this image), for
        segment(concepts=[...]) on other images, or Concept.to_bytes()."""
        pr = _segment_prompt(text, boxes, box_labels, ())
        ptr = _vp()
        _check(load_library().sam3_concept_new(self._live(), pr, ctypes.byref(ptr)), self._ptr)
        return Concept(self.model, ptr)

    def segment_points(self, points=None, point_labels=None, box=None, mask_logits=None, single_mask=False,
                       mask_threshold=0.5, masks=True):
        """The one object that clicks ((N, 2) x y in image pixels; point_labels 1 on the object, 0
        background, default all 1), a box (x0, y0, x1, y1) and/or mask_logits (a previous result's
        low_res_logits[i]) point at. Three candidate masks, or one with single_mask; mask_threshold
        is a probability, as in segment (0: every pixel)."""
        cp, n = _points_arg(points, point_labels)
        pp = _zeroed(_PointsPrompt)
        pp.points = cp if n else None
        pp.n_points = n
        cbox = _box_arg(box)
        pp.box = cbox
        mk = None
        if mask_logits is not None:
            mk = np.ascontiguousarray(mask_logits, dtype=np.float32)
            if mk.ndim != 2:
                raise ArgumentTypeError(ERR_INVALID_ARG, "sam3: mask_logits must be (h, w), got %s" % (mk.shape,))
            if not np.isfinite(mk).all():
                raise InvalidArgumentError(ERR_INVALID_ARG, "sam3: mask_logits must be finite (no NaN or infinity)")
            pp.mask_logits = mk.ctypes.data_as(c_float_p)
            pp.mask_height, pp.mask_width = mk.shape
        opt = _zeroed(_PointsOptions)
        opt.single_mask = 1 if single_mask else 0
        mask_threshold = _real(mask_threshold, "mask_threshold")
        opt.mask_threshold = mask_threshold if mask_threshold > 0 else -1.0  # 0 is "the default" to the library
        opt.no_masks = 0 if masks else 1
        out = _zeroed(_PointsResult)
        _check(load_library().sam3_segment_points(self._live(), pp, opt, out), self._ptr)
        return PointsResult(out, masks)

    def timings(self):
        """Milliseconds of each stage of the last calls (sam3_timings) as a dict."""
        t = load_library().sam3_ctx_timings(self._live())
        return {name: getattr(t, name) for name, _ in _Timings._fields_ if not name.startswith("_")}


class Tracker(_Handle):
    """Follows prompted objects through a stream of frames (the SAM 3 tracker's memory), on a
    Context (whose image and results it replaces on every frame; a model converted with its memory
    modules). Frames are numbered 0, 1, ... in the order they are pushed. With masks=False the
    frame-size masks are skipped (boxes and areas are then 0); mask_threshold is their probability
    threshold, as in Context.segment (0: every pixel). close() frees it (closing the Context does too)."""
    _free, _what = "sam3_tracker_free", "tracker"

    def __init__(self, ctx, masks=True, mask_threshold=0.5):
        if not isinstance(ctx, Context):
            raise ArgumentTypeError(ERR_INVALID_ARG, "sam3: Tracker wants a Context, not %s" % type(ctx).__name__)
        self.ctx = ctx  # kept alive as long as the tracker
        self.masks = masks
        opt = _zeroed(_TrackerOptions)
        opt.no_masks = 0 if masks else 1
        mask_threshold = _real(mask_threshold, "mask_threshold")
        opt.mask_threshold = mask_threshold if mask_threshold > 0 else -1.0
        ptr = _vp()
        cp = ctx._live()
        _check(load_library().sam3_tracker_new(cp, opt, ctypes.byref(ptr)), cp)
        self._ptr = ptr
        ctx.__dict__.setdefault("_trackers", weakref.WeakSet()).add(self)

    def _live(self):
        ptr = super()._live()
        self.ctx._live()  # the C tracker works in its context's memory
        return ptr

    @property
    def next_frame(self):
        """Index of the next frame to be pushed (the number pushed so far)."""
        return load_library().sam3_tracker_next_frame(self._live())

    @property
    def memory_used(self):
        """Bytes the tracker holds (memories, prompts, results), beyond its context's."""
        return int(load_library().sam3_tracker_memory_used(self._live()))

    def add_prompt(self, frame, object_id, points=None, labels=None, box=None, mask=None):
        """Where object `object_id` is on frame `frame`, which must be the next frame to be pushed:
        clicks ((N, 2) x y in that frame's pixels; labels 1 on the object, 0 background, default
        all 1) and/or a box (x0, y0, x1, y1), or a mask ((h, w), non-zero = object, any size). A new
        id starts being tracked there; a known one is corrected (a conditioning frame)."""
        cp, n = _points_arg(points, labels)
        tp = _zeroed(_TrackerPrompt)
        tp.points = cp if n else None
        tp.n_points = n
        mk = None
        cbox = _box_arg(box)
        tp.box = cbox
        if mask is not None:
            mk = np.ascontiguousarray(np.asarray(mask) != 0, dtype=np.uint8)
            if mk.ndim != 2:
                raise ArgumentTypeError(ERR_INVALID_ARG, "sam3: the mask must be (h, w), got %s" % (mk.shape,))
            tp.mask = mk.ctypes.data_as(c_uint8_p)
            tp.mask_height, tp.mask_width = mk.shape
        t = self._live()
        _check(load_library().sam3_tracker_add_prompt(t, _int32(frame, "frame"), _int32(object_id, "object_id"), tp), self.ctx._ptr)

    def remove_object(self, object_id):
        """Forgets an object (and a prompt pending for it); Error for an unknown id."""
        t = self._live()
        _check(load_library().sam3_tracker_remove_object(t, _int32(object_id, "object_id")), self.ctx._ptr)

    def reset(self):
        """Forgets every object and restarts the frame count at 0."""
        load_library().sam3_tracker_reset(self._live())

    def push_frame(self, image):
        """Processes the next frame ((H, W, 3) RGB uint8; RGBA and grey also; sizes may change) and
        returns a list with a dict per object, in the order the objects were first prompted: id,
        object_score (logit: > 0 visible), prompted (a prompt was given on this frame), box (x0, y0,
        x1, y1: the mask's pixel bounds, x1 and y1 exclusive; zeros when empty), area, mask ((H, W)
        bool, or None with masks=False), low_res_logits ((h, w) float32). On an error the tracker
        is as it was before the call."""
        a, fmt = _as_image(image)
        h, w = a.shape[:2]
        out = _zeroed(_TrackerResult)
        t = self._live()
        _check(load_library().sam3_tracker_push_frame(t, a.ctypes.data_as(c_uint8_p), w, h, a.strides[0], fmt, out), self.ctx._ptr)
        lh, lw = out.low_res_height, out.low_res_width
        objects = []
        for i in range(out.n_objects):
            o = out.objects[i]
            objects.append({
                "id": o.id, "object_score": float(o.object_score), "prompted": bool(o.prompted),
                "box": o.box.as_array(), "area": int(o.area),
                "mask": np.ctypeslib.as_array(o.mask, shape=(out.height, out.width)) != 0 if o.mask else None,
                "low_res_logits": np.ctypeslib.as_array(o.low_res_logits, shape=(lh, lw)).copy()})
        return objects
