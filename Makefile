# sam3.h - build, test and demo. Plain make; every target has a comment.
# On a fresh Debian 12 machine, as root: `make demo` and `make test` install what they need.

CC       ?= cc
CXX      ?= c++
# Cross builds: `make CROSS=aarch64-linux-gnu- ...` uses that prefix's gcc/g++ and the target's
# OpenBLAS (see test-cross). ARCH: no -march by default: the kernels are chosen at run time (sam3.h
# "kernel paths"), so one build runs on any x86-64 or aarch64 machine at its best path; ARCH=-march=native
# also compiles the code around the kernels for this CPU. KARCH: the one-path kernel tests' target.
CROSS    ?=
ifneq ($(CROSS),)
CC       := $(CROSS)gcc
CXX      := $(CROSS)g++
endif
ARCH     ?=
KARCH    ?= $(if $(CROSS),,-march=native)
CFLAGS   ?= -O3 $(ARCH) -g
WARN     := -Wall -Wextra -pedantic
OPENMP   ?= 1
PYTHON   ?= /usr/bin/python3
# stb headers as system headers: stb_easy_font.h is not -Wextra clean, and its warnings are not ours
STB_INC  ?= -isystem /usr/include/stb
BUILD    ?= build
DEB_PKGS := gcc g++ make libopenblas-dev libopenblas0-openmp libstb-dev python3-numpy pkg-config
# The CLI reads images with libjpeg-turbo and libpng (examples/image_io.h); the tests compare its
# JPEG decode with djpeg's (libjpeg-turbo-progs).
DEB_PKGS += libjpeg62-turbo-dev libpng-dev libjpeg-turbo-progs
# GNU parallel: tests/test_dataset.sh runs the README's sharding recipe with it (skipped without).
DEB_PKGS += parallel
IMG_LIBS := -ljpeg -lpng
# OpenBLAS: Debian's default libopenblas is the pthread build, whose idle threads spin while our
# OpenMP loops run (measured: vision encoder 44 s vs 28 s on 2 cores); with OPENMP=1 we link the
# OpenMP build of the same library when it is installed, so both share one thread pool.
MULTIARCH ?= $(shell $(CC) -print-multiarch 2>/dev/null)
OPENBLAS_OMP_DIR ?= /usr/lib/$(MULTIARCH)/openblas-openmp
# (recursive variables: evaluated when a recipe runs, i.e. after `deps` installed the packages)
BLAS_LIBS ?= $(if $(and $(filter 1,$(OPENMP)),$(shell test -e $(OPENBLAS_OMP_DIR)/libopenblas.so.0 && echo y)),-L$(OPENBLAS_OMP_DIR) -Wl$(comma)-rpath$(comma)$(OPENBLAS_OMP_DIR) -l:libopenblas.so.0,-lopenblas)
comma := ,

ifeq ($(OPENMP),1)
OMPFLAGS := -fopenmp
endif
C_FLAGS   := -std=c99 $(WARN) $(CFLAGS) $(OMPFLAGS)
CXX_FLAGS := -std=c++11 $(WARN) $(CFLAGS) $(OMPFLAGS)
LIBS       = $(BLAS_LIBS) -lm

TINY      := tiny_a tiny_b
TINY_SAM3 := $(patsubst %,$(BUILD)/%.sam3,$(TINY))
SAM1_TINY := sam1_a sam1_b
SAM1_SAM3 := $(patsubst %,$(BUILD)/%.sam3,$(SAM1_TINY))
VIDEO_SAM3 := $(BUILD)/video_a.sam3
# The same tiny models converted with --dtype bf16 (test_parity --bf16, test_format)
BF16_SAM3 := $(patsubst %,$(BUILD)/%_bf16.sam3,$(TINY) $(SAM1_TINY))
# tiny_a converted with --image-size 70 (test_parity against tests/data/tiny_a_s70)
SIZED_SAM3 := $(BUILD)/tiny_a_s70.sam3
TESTS     := $(BUILD)/test_format $(BUILD)/test_parity $(BUILD)/test_tokenizer $(BUILD)/test_compile_c $(BUILD)/test_compile_cpp \
             $(BUILD)/test_video
TESTS     += $(BUILD)/test_gemm $(BUILD)/test_parity_noblas
TESTS     += $(BUILD)/test_concept $(BUILD)/test_rle $(BUILD)/test_saved_concept $(BUILD)/test_vocab
TESTS     += $(BUILD)/test_kernels $(BUILD)/test_parity_ref $(BUILD)/test_video_ref
# REF_VIDEO=0 leaves out the video test on the reference kernels (`make asan`/`ubsan`: ~2 min of CPU
# there; the reference kernels are under the sanitizers through test_parity_ref)
REF_VIDEO ?= 1
EXAMPLES  := $(BUILD)/embed_min $(BUILD)/camera_loop
EXAMPLES  += $(BUILD)/track_loop
SHARED    ?= ../shared
# Parallel compiles inside the test targets (each test program compiles all of sam3.h: 15-25 s at
# -O3; the tests themselves run in order, one at a time). `make test JOBS=1` for one compile at a time.
JOBS      ?= $(shell nproc 2>/dev/null || echo 1)

.PHONY: all deps examples test test-c demo convert bench asan ubsan tsan valgrind fuzz fuzz-image fuzz-y4m fuzz-merge fuzz-concept fuzz-corpus clean debug test-mingw warnings test-cross

# The command-line tool. Its translation units (examples/cli_common.h says what each holds; sam3.h's
# implementation is compiled in sam3_cli.c alone, stb_image_write's in cli_common.c) and headers:
CLI_SRCS := examples/sam3_cli.c examples/cli_common.c examples/cli_track.c examples/cli_dataset.c examples/cli_outdir.c \
            examples/image_io.c examples/sam3_bench.c
CLI_HDRS := examples/cli_common.h examples/cli_dataset.h examples/cli_outdir.h examples/cli_y4m.h examples/image_io.h sam3.h
all: $(BUILD)/sam3

# Install the Debian packages we build against that are missing, naming them (needs root and
# apt-get). Skipped, with the list of packages, where apt-get is not available or with NO_DEPS=1.
NO_DEPS ?=
deps:
	@if [ "$(NO_DEPS)" = 1 ]; then echo "make deps: NO_DEPS=1: not checking for the Debian packages $(DEB_PKGS)"; \
	elif ! command -v apt-get >/dev/null 2>&1 || ! command -v dpkg-query >/dev/null 2>&1; then \
	  echo "make deps: no apt-get here: skipped; this build needs (Debian names) $(DEB_PKGS)"; \
	else missing=; for p in $(DEB_PKGS); do \
	    dpkg-query -W -f='$${db:Status-Abbrev}' $$p 2>/dev/null | grep -q '^ii' || missing="$$missing $$p"; done; \
	  if [ -n "$$missing" ]; then \
	    if [ "$$(id -u)" != 0 ]; then \
	      echo "make deps: missing Debian packages:$$missing; install them as root (or NO_DEPS=1 to skip this check)" >&2; exit 1; fi; \
	    echo "make deps: installing the missing Debian packages:$$missing"; \
	    DEBIAN_FRONTEND=noninteractive apt-get update -q && \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $$missing; fi; fi

$(BUILD):
	@mkdir -p $(BUILD)

$(BUILD)/sam3: $(CLI_SRCS) $(CLI_HDRS) | $(BUILD)
	$(CC) $(C_FLAGS) $(STB_INC) -o $@ $(CLI_SRCS) $(LIBS) $(IMG_LIBS)

# The embedding examples (built warning-free: -Werror): embed_min.c is the QUICK START of sam3.h;
# camera_loop.c runs one context per thread on RGBA frames with deadlines.
examples: $(EXAMPLES)
$(BUILD)/embed_min: examples/embed_min.c sam3.h | $(BUILD)
	$(CC) $(C_FLAGS) -Werror -I. $(STB_INC) -o $@ examples/embed_min.c $(LIBS)
$(BUILD)/camera_loop: examples/camera_loop.c sam3.h | $(BUILD)
	$(CC) $(C_FLAGS) -Werror -I. -pthread -o $@ examples/camera_loop.c $(LIBS)
# track_loop.c follows one clicked object through camera frames with the video tracker.
$(BUILD)/track_loop: examples/track_loop.c sam3.h | $(BUILD)
	$(CC) $(C_FLAGS) -Werror -I. -o $@ examples/track_loop.c $(LIBS)

# ---- Library and install (README "Install"). `make lib`: sam3.h compiled once (examples/sam3_lib.c)
# into build/libsam3.a and build/libsam3.so (exports the public sam3_* functions only). `make install`
# copies sam3.h, a generated sam3.pc (-lsam3; OpenMP and the OpenBLAS build chosen above in
# Libs.private), a CMake package config (find_package(sam3)) and the CLI under $(DESTDIR)$(PREFIX),
# and the libraries too when built (`make lib install`);
# `make uninstall` removes them. The library chooses its kernels at run time: it runs on any machine
# of its architecture.
.PHONY: lib install uninstall
PREFIX       ?= /usr/local
BINDIR       ?= $(PREFIX)/bin
INCLUDEDIR   ?= $(PREFIX)/include
LIBDIR       ?= $(PREFIX)/lib
PKGCONFIGDIR ?= $(LIBDIR)/pkgconfig
SAM3_VERSION := $(shell sed -n 's/^\#define SAM3_VERSION_STRING "\(.*\)"/\1/p' sam3.h)
# libsam3.so.MAJOR.MINOR: struct layouts are fixed within a minor version only (sam3.h, section 8)
SAM3_SONAME  := libsam3.so.$(word 1,$(subst ., ,$(SAM3_VERSION))).$(word 2,$(subst ., ,$(SAM3_VERSION)))
LIB_FILES    := $(BUILD)/libsam3.a $(BUILD)/libsam3.so
# the libraries go with `make install` when `lib` is a goal too or they were built before
INSTALL_LIBS  = $(if $(filter lib,$(MAKECMDGOALS)),$(LIB_FILES),$(wildcard $(LIB_FILES)))
lib: $(LIB_FILES)
# one position-independent object for both libraries (one compile of the implementation)
$(BUILD)/sam3_lib.o: examples/sam3_lib.c sam3.h | $(BUILD)
	$(CC) $(C_FLAGS) -Werror -fPIC -fvisibility=hidden -DSAM3_SHARED -c -o $@ examples/sam3_lib.c
$(BUILD)/libsam3.a: $(BUILD)/sam3_lib.o
	rm -f $@ && $(AR) rcs $@ $<
$(BUILD)/libsam3.so: $(BUILD)/sam3_lib.o
	$(CC) $(CFLAGS) $(OMPFLAGS) -shared -Wl,-soname,$(SAM3_SONAME) -o $@ $< $(LIBS)
CMAKEDIR     ?= $(LIBDIR)/cmake/sam3
install: all $(INSTALL_LIBS)
	@# sam3.pc: -lsam3 where the libraries are installed, what libsam3 itself needs (the BLAS,
	@# OpenMP) in Libs.private: `pkg-config --static --libs` for libsam3.a, or for a program that
	@# defines SAM3_IMPLEMENTATION and compiles the implementation itself (add -fopenmp to run its
	@# loops on several threads)
	@printf '%s\n' 'prefix=$(PREFIX)' 'includedir=$(INCLUDEDIR)' 'libdir=$(LIBDIR)' '' 'Name: sam3' \
	    'Description: Meta SAM 3 segmentation in C (the single header sam3.h; libsam3 after make lib install)' \
	    'Version: $(SAM3_VERSION)' 'Cflags: -I$${includedir}' \
	    'Libs: $(if $(INSTALL_LIBS),-L$${libdir} -lsam3)' 'Libs.private: $(BLAS_LIBS) -lm $(OMPFLAGS)' >$(BUILD)/sam3.pc
	@# CMake: find_package(sam3) gives sam3::sam3 (libsam3.so), sam3::static (libsam3.a and what it
	@# needs) and sam3::header (the include directory alone, for a program compiling the implementation)
	@printf '%s\n' '# sam3 $(SAM3_VERSION), written by make install' \
	    'set(sam3_VERSION $(SAM3_VERSION))' 'set(sam3_INCLUDE_DIR "$(INCLUDEDIR)")' \
	    'if(NOT TARGET sam3::header)' '  add_library(sam3::header INTERFACE IMPORTED)' \
	    '  set_target_properties(sam3::header PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "$(INCLUDEDIR)")' \
	    '  set_property(TARGET sam3::header PROPERTY INTERFACE_LINK_LIBRARIES $(BLAS_LIBS) m)' \
	    '$(if $(INSTALL_LIBS),  add_library(sam3::sam3 SHARED IMPORTED)' \
	    '  set_target_properties(sam3::sam3 PROPERTIES IMPORTED_LOCATION "$(LIBDIR)/$(SAM3_SONAME)" IMPORTED_SONAME $(SAM3_SONAME)' \
	    '                        INTERFACE_INCLUDE_DIRECTORIES "$(INCLUDEDIR)")' \
	    '  add_library(sam3::static STATIC IMPORTED)' \
	    '  set_target_properties(sam3::static PROPERTIES IMPORTED_LOCATION "$(LIBDIR)/libsam3.a" INTERFACE_INCLUDE_DIRECTORIES "$(INCLUDEDIR)")' \
	    '  set_property(TARGET sam3::static PROPERTY INTERFACE_LINK_LIBRARIES $(BLAS_LIBS) m $(OMPFLAGS))' \
	    ')endif()' >$(BUILD)/sam3Config.cmake
	@printf '%s\n' 'set(PACKAGE_VERSION $(SAM3_VERSION))' \
	    'if(PACKAGE_FIND_VERSION_MAJOR STREQUAL "$(word 1,$(subst ., ,$(SAM3_VERSION)))" AND NOT PACKAGE_FIND_VERSION VERSION_GREATER PACKAGE_VERSION)' \
	    '  set(PACKAGE_VERSION_COMPATIBLE TRUE)' 'endif()' 'if(PACKAGE_FIND_VERSION VERSION_EQUAL PACKAGE_VERSION)' \
	    '  set(PACKAGE_VERSION_EXACT TRUE)' 'endif()' >$(BUILD)/sam3ConfigVersion.cmake
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(INCLUDEDIR) $(DESTDIR)$(PKGCONFIGDIR) $(DESTDIR)$(CMAKEDIR)
	install -m 755 $(BUILD)/sam3 $(DESTDIR)$(BINDIR)/sam3
	install -m 644 sam3.h $(DESTDIR)$(INCLUDEDIR)/sam3.h
	install -m 644 $(BUILD)/sam3.pc $(DESTDIR)$(PKGCONFIGDIR)/sam3.pc
	install -m 644 $(BUILD)/sam3Config.cmake $(BUILD)/sam3ConfigVersion.cmake $(DESTDIR)$(CMAKEDIR)/
	$(if $(INSTALL_LIBS),install -d $(DESTDIR)$(LIBDIR) && install -m 644 $(BUILD)/libsam3.a $(DESTDIR)$(LIBDIR)/libsam3.a && \
	    install -m 755 $(BUILD)/libsam3.so $(DESTDIR)$(LIBDIR)/libsam3.so.$(SAM3_VERSION) && \
	    ln -sf libsam3.so.$(SAM3_VERSION) $(DESTDIR)$(LIBDIR)/$(SAM3_SONAME) && \
	    ln -sf $(SAM3_SONAME) $(DESTDIR)$(LIBDIR)/libsam3.so)
	@if [ -n "$(INSTALL_LIBS)" ] && [ -z "$(DESTDIR)" ] && [ "$$(id -u)" = 0 ] && command -v ldconfig >/dev/null; then ldconfig; fi
	@echo "make install: sam3 $(SAM3_VERSION) in $(DESTDIR)$(PREFIX)$(if $(INSTALL_LIBS), with libsam3, (no libsam3: make lib install)); build with: pkg-config --cflags --libs sam3"
uninstall:
	rm -f $(DESTDIR)$(CMAKEDIR)/sam3Config.cmake $(DESTDIR)$(CMAKEDIR)/sam3ConfigVersion.cmake
	rm -f $(DESTDIR)$(BINDIR)/sam3 $(DESTDIR)$(INCLUDEDIR)/sam3.h $(DESTDIR)$(PKGCONFIGDIR)/sam3.pc $(DESTDIR)$(LIBDIR)/libsam3.a \
	    $(DESTDIR)$(LIBDIR)/libsam3.so $(DESTDIR)$(LIBDIR)/$(SAM3_SONAME) $(DESTDIR)$(LIBDIR)/libsam3.so.$(SAM3_VERSION)

# Tiny random-weight models converted from the committed reference checkpoints.
$(BUILD)/%.sam3: tests/data/%/model.safetensors tests/data/%/config.json tools/convert.py tools/sam3file.py | $(BUILD)
	$(PYTHON) tools/convert.py --quiet tests/data/$* $@
$(BUILD)/tiny_a_s70.sam3: tests/data/tiny_a/model.safetensors tests/data/tiny_a/config.json tools/convert.py tools/sam3file.py | $(BUILD)
	$(PYTHON) tools/convert.py --quiet --image-size 70 tests/data/tiny_a $@
# and with bf16 Linear/Conv weights
$(BUILD)/%_bf16.sam3: tests/data/%/model.safetensors tests/data/%/config.json tools/convert.py tools/sam3file.py | $(BUILD)
	$(PYTHON) tools/convert.py --quiet --dtype bf16 tests/data/$* $@

$(BUILD)/test_format: tests/test_format.c tests/test_util.h sam3.h | $(BUILD)
	$(CC) $(C_FLAGS) -o $@ tests/test_format.c $(LIBS)
# sam3_mask_to_rle against COCO's compressed RLE strings (no files).
$(BUILD)/test_rle: tests/test_rle.c tests/test_util.h sam3.h | $(BUILD)
	$(CC) $(C_FLAGS) -o $@ tests/test_rle.c $(LIBS)
$(BUILD)/test_parity: tests/test_parity.c tests/test_util.h tests/test_dump.h sam3.h | $(BUILD)
	$(CC) $(C_FLAGS) -o $@ tests/test_parity.c $(LIBS)
# The video tracker against its reference stream (frames cut from $(SHARED)/images/test_image.jpg).
$(BUILD)/test_video: tests/test_video.c tests/video_frames.h tests/test_util.h tests/test_dump.h sam3.h | $(BUILD)
	$(CC) $(C_FLAGS) $(STB_INC) -o $@ tests/test_video.c $(LIBS)
# The concept tracker (Sam3VideoModel): its mask primitives against tests/concept_ops.py, its
# stream against HF's (frames cut from $(SHARED)/images/test_image.jpg, as test_video's).
$(BUILD)/test_saved_concept: tests/test_saved_concept.c tests/test_util.h tests/test_dump.h sam3.h | $(BUILD)
	$(CC) $(C_FLAGS) -o $@ tests/test_saved_concept.c $(LIBS)
$(BUILD)/test_vocab: tests/test_vocab.c tests/test_util.h sam3.h | $(BUILD)
	$(CC) $(C_FLAGS) -o $@ tests/test_vocab.c $(LIBS)
# tiny_a's config with one tensor's weights moved: a model a concept of tiny_a must not pass for
$(BUILD)/tiny_a_alt.sam3: tests/data/tiny_a/model.safetensors tests/data/tiny_a/config.json tools/patch_tensor.py tools/convert.py | $(BUILD)
	rm -rf $(BUILD)/tiny_a_alt && mkdir -p $(BUILD)/tiny_a_alt && cp tests/data/tiny_a/*.json tests/data/tiny_a/merges.txt tests/data/tiny_a/model.safetensors $(BUILD)/tiny_a_alt/
	$(PYTHON) tools/patch_tensor.py $(BUILD)/tiny_a_alt/model.safetensors detector_model.detr_decoder.box_head.layer1.weight 0.01
	$(PYTHON) tools/convert.py --quiet $(BUILD)/tiny_a_alt $@
$(BUILD)/test_concept: tests/test_concept.c tests/video_frames.h tests/test_util.h tests/test_dump.h sam3.h | $(BUILD)
	$(CC) $(C_FLAGS) $(STB_INC) -o $@ tests/test_concept.c $(LIBS)
# The same frames as PNG files, for tools/make_reference_video.py on the GPU machine:
#   build/make_video_frames ../shared/images/test_image.jpg 10 DIR
$(BUILD)/make_video_frames: tests/make_video_frames.c tests/video_frames.h | $(BUILD)
	$(CC) $(C_FLAGS) $(STB_INC) -o $@ tests/make_video_frames.c -lm
# The built-in SGEMM against a double reference; and the parity test built without BLAS (the
# model's products through the built-in SGEMM).
$(BUILD)/test_gemm: tests/test_gemm.c tests/test_util.h sam3.h | $(BUILD)
	$(CC) $(C_FLAGS) $(KARCH) -DSAM3_NO_DISPATCH -o $@ tests/test_gemm.c $(LIBS)
$(BUILD)/test_parity_noblas: tests/test_parity.c tests/test_util.h tests/test_dump.h sam3.h | $(BUILD)
	$(CC) $(C_FLAGS) -DSAM3_NO_BLAS -o $@ tests/test_parity.c -lm
# The image encoder timed alone, and with the SAM3_PROFILE build's split of its time by stage
# (tuning runs on a full-size file: not part of make test).
$(BUILD)/prof_encoder: tests/prof_encoder.c sam3.h | $(BUILD)
	$(CC) $(C_FLAGS) -DSAM3_PROFILE -o $@ tests/prof_encoder.c $(LIBS)
$(BUILD)/time_encoder: tests/prof_encoder.c sam3.h | $(BUILD)
	$(CC) $(C_FLAGS) -o $@ tests/prof_encoder.c $(LIBS)
# The fast kernels against the reference ones (sam3__ref_*) on ragged and hostile inputs.
# test_gemm with short bf16 k blocks (SAM3__BKC and the AMX sizes; test_gemm's shapes follow them),
# so that its products crossing every block stay small enough for qemu: test-cross runs aarch64's
# BFDOT kernel through it
$(BUILD)/test_gemm_kb: tests/test_gemm.c tests/test_util.h sam3.h | $(BUILD)
	$(CC) $(C_FLAGS) $(KARCH) -DSAM3_NO_DISPATCH -DSAM3__BKC=512 -DSAM3__BKC_AMX=256 -DSAM3__BMC_AMX=64 -DSAM3__BPA_BYTES=65536 -o $@ tests/test_gemm.c $(LIBS)
$(BUILD)/test_kernels: tests/test_kernels.c tests/test_util.h sam3.h | $(BUILD)
	$(CC) $(C_FLAGS) $(KARCH) -DSAM3_NO_DISPATCH -o $@ tests/test_kernels.c $(LIBS)
# The parity tests on the reference kernels alone (-DSAM3_REFERENCE_KERNELS: plain C, no SIMD, no BLAS).
$(BUILD)/test_parity_ref: tests/test_parity.c tests/test_util.h tests/test_dump.h sam3.h | $(BUILD)
	$(CC) $(C_FLAGS) -DSAM3_REFERENCE_KERNELS -o $@ tests/test_parity.c -lm
$(BUILD)/test_video_ref: tests/test_video.c tests/video_frames.h tests/test_util.h tests/test_dump.h sam3.h | $(BUILD)
	$(CC) $(C_FLAGS) $(STB_INC) -DSAM3_REFERENCE_KERNELS -o $@ tests/test_video.c -lm
$(BUILD)/test_tokenizer: tests/test_tokenizer.c tests/test_util.h sam3.h | $(BUILD)
	$(CC) $(C_FLAGS) -o $@ tests/test_tokenizer.c $(LIBS)
$(BUILD)/tok_synth.sam3: tests/data/tiny_a/vocab.json tests/make_tokenizer_file.py tools/convert.py | $(BUILD)
	$(PYTHON) tests/make_tokenizer_file.py tests/data/tiny_a $@

$(BUILD)/test_compile_c: tests/test_compile.c tests/test_compile_impl.c tests/test_compile_static.c sam3.h | $(BUILD)
	$(CC) $(C_FLAGS) -Werror -c -DTU_FN=sam3_test_static_a -o $(BUILD)/tcs_a.o tests/test_compile_static.c
	$(CC) $(C_FLAGS) -Werror -c -DTU_FN=sam3_test_static_b -o $(BUILD)/tcs_b.o tests/test_compile_static.c
	$(CC) $(C_FLAGS) -Werror -o $@ tests/test_compile.c tests/test_compile_impl.c $(BUILD)/tcs_a.o $(BUILD)/tcs_b.o $(LIBS)
$(BUILD)/test_compile_cpp: tests/test_compile.c tests/test_compile_impl.c tests/test_compile_static.c sam3.h | $(BUILD)
	$(CXX) $(CXX_FLAGS) -Werror -x c++ -c -DTU_FN=sam3_test_static_a -o $(BUILD)/tcs_a_cpp.o tests/test_compile_static.c
	$(CXX) $(CXX_FLAGS) -Werror -x c++ -c -DTU_FN=sam3_test_static_b -o $(BUILD)/tcs_b_cpp.o tests/test_compile_static.c
	$(CXX) $(CXX_FLAGS) -Werror -x c++ -o $@ tests/test_compile.c tests/test_compile_impl.c -x none $(BUILD)/tcs_a_cpp.o $(BUILD)/tcs_b_cpp.o $(LIBS)
	$(CXX) -std=c++20 $(WARN) $(OMPFLAGS) -Wc++20-compat -Werror -x c++ -fsyntax-only -DTU_FN=sam3_test_static_c tests/test_compile_static.c # C++20's keywords (concept, requires) are no names here

# ---- Robustness (README "Robustness"): the API under abuse, threads, fuzzing, sanitizers, valgrind.
ROBUST     := $(BUILD)/test_robust $(BUILD)/test_threads $(BUILD)/fuzz_replay $(BUILD)/fuzz_image_replay $(BUILD)/test_outdir
ROBUST     += $(BUILD)/fuzz_y4m_replay $(BUILD)/fuzz_merge_replay $(BUILD)/fuzz_concept_replay
FUZZ_SEEDS := $(BUILD)/fuzz_seeds/micro.sam3
FUZZ_KEPT  := $(BUILD)/fuzz_kept/.unpacked
$(BUILD)/test_robust: tests/test_robust.c tests/test_util.h sam3.h | $(BUILD)
	$(CC) $(C_FLAGS) -o $@ tests/test_robust.c $(LIBS)
$(BUILD)/test_threads: tests/test_threads.c tests/test_util.h sam3.h | $(BUILD)
	$(CC) $(C_FLAGS) -pthread -o $@ tests/test_threads.c $(LIBS)
# The fuzz target with a main() that runs each given file (or directory of files) once: any compiler.
$(BUILD)/fuzz_replay: tests/fuzz_load.c sam3.h | $(BUILD)
	$(CC) $(C_FLAGS) -DSAM3_FUZZ_REPLAY -o $@ tests/fuzz_load.c $(LIBS)
# The CLI's image reader (examples/image_io.c) under the same kind of replay main(); its --dump
# mode writes the decoded pixels (tests/test_image_io.sh compares JPEGs with djpeg's decode).
$(BUILD)/fuzz_image_replay: tests/fuzz_image.c examples/image_io.c examples/image_io.h | $(BUILD)
	$(CC) $(C_FLAGS) -DSAM3_FUZZ_REPLAY -o $@ tests/fuzz_image.c examples/image_io.c $(IMG_LIBS)
# The CLI's YUV4MPEG2 reader (examples/cli_y4m.h) under the same replay main(); --dump prints a frame.
$(BUILD)/fuzz_y4m_replay: tests/fuzz_y4m.c examples/cli_y4m.h | $(BUILD)
	$(CC) $(C_FLAGS) -DSAM3_FUZZ_REPLAY -o $@ tests/fuzz_y4m.c
# `sam3 merge`'s reader of per-image coco.json files (examples/cli_dataset.c) under the replay main().
$(BUILD)/fuzz_concept_replay: tests/fuzz_concept.c tests/fuzz_replay.h sam3.h | $(BUILD)
	$(CC) $(C_FLAGS) -DSAM3_FUZZ_REPLAY -o $@ tests/fuzz_concept.c $(LIBS)
FUZZ_MERGE_SRCS := tests/fuzz_merge.c examples/cli_dataset.c
FUZZ_MERGE_DEPS := $(FUZZ_MERGE_SRCS) examples/cli_dataset.h examples/cli_common.h examples/cli_outdir.h sam3.h
$(BUILD)/fuzz_merge_replay: $(FUZZ_MERGE_DEPS) | $(BUILD)
	$(CC) $(C_FLAGS) -DSAM3_FUZZ_REPLAY -o $@ $(FUZZ_MERGE_SRCS)
# The CLI's safe output-folder writer (examples/cli_outdir.c) alone, in a manifest + subfolder layout.
$(BUILD)/test_outdir: tests/test_outdir.c examples/cli_outdir.c examples/cli_outdir.h | $(BUILD)
	$(CC) $(C_FLAGS) -o $@ tests/test_outdir.c examples/cli_outdir.c
# Small seed files for the fuzzer (complete micro SAM 3 and SAM 1 models, cut tables), by script.
$(FUZZ_SEEDS): tests/make_fuzz_seeds.py tools/convert.py tools/sam3file.py tools/make_random_checkpoint.py | $(BUILD)
	$(PYTHON) tests/make_fuzz_seeds.py $(BUILD)/fuzz_seeds
# The committed corpus (what the fuzzer found that the seeds do not cover, and every input that
# ever crashed), unpacked from tests/fuzz/corpus.tar.xz.
$(FUZZ_KEPT): tests/fuzz/corpus.tar.xz tests/fuzz_corpus.py | $(BUILD)
	@$(PYTHON) tests/fuzz_corpus.py unpack tests/fuzz/corpus.tar.xz $(BUILD)/fuzz_kept && touch $@

# A tiny SAM 3 whose text encoder uses quick_gelu, and its text features from a numpy restatement
# of the CLIP text encoder (token ids from the CLI's tokenizer): test_parity's text test on it.
QGELU := $(BUILD)/qgelu/ref_text.sam3
$(QGELU): tests/make_quick_gelu.py tools/convert.py tools/sam3file.py tools/make_random_checkpoint.py $(BUILD)/sam3 | $(BUILD)
	$(PYTHON) tests/make_quick_gelu.py $(BUILD)/qgelu $(BUILD)/sam3

# The C tests, the example programs and the CLI on the tiny models, and the fuzz inputs replayed:
# `make test` runs these; `make asan` / `make ubsan` build and run them again with sanitizers.
TEST_C_DEPS := $(TESTS) $(ROBUST) $(EXAMPLES) $(BUILD)/sam3 $(TINY_SAM3) $(SAM1_SAM3) $(VIDEO_SAM3) $(BUILD)/tok_synth.sam3 \
               $(FUZZ_SEEDS) $(FUZZ_KEPT) $(BF16_SAM3) $(QGELU) $(SIZED_SAM3) $(BUILD)/tiny_a_alt.sam3
test-c: deps $(TEST_C_DEPS)
	@SHARED=$(SHARED) REF_VIDEO=$(REF_VIDEO) sh tests/run.sh $(BUILD) c

# Everything hermetic: no network, no GPU. The suites are listed, one line each, in tests/run.sh;
# each runs whatever the others did, and the last line counts them. The kernel-sensitive suites
# run again on the lower kernel paths this CPU runs (SAM3_ISA avx2, reference), and on a CPU
# with AVX-512 test_kernels and test_gemm (built for one path: SAM3_NO_DISPATCH) again as an AVX2
# build ($(BUILD)/avx2, -march=x86-64-v3; MATRIX=0: not).
MATRIX    ?= $(if $(and $(if $(CROSS),,y),$(shell grep -qw avx512f /proc/cpuinfo 2>/dev/null && echo y)),1,0)
AVX2_DIR  := $(BUILD)/avx2
AVX2_PROGS := test_gemm test_kernels tiny_a.sam3
test: deps
	@$(MAKE) --no-print-directory -j$(JOBS) all lib $(TEST_C_DEPS)
	@if [ "$(MATRIX)" = 1 ]; then $(MAKE) --no-print-directory -j$(JOBS) BUILD=$(AVX2_DIR) KARCH=-march=x86-64-v3 \
	    $(addprefix $(AVX2_DIR)/,$(AVX2_PROGS)); fi
	@CC="$(CC)" CFLAGS="$(CFLAGS)" MAKE="$(MAKE)" SHARED=$(SHARED) REF_VIDEO=$(REF_VIDEO) \
	    MATRIX="$(if $(filter 1,$(MATRIX)),$(AVX2_DIR))" sh tests/run.sh $(BUILD) all

# test-c built with AddressSanitizer + UndefinedBehaviorSanitizer (with float-cast-overflow, which
# gcc's -fsanitize=undefined leaves out), every report fatal, in $(BUILD)/asan; ubsan: UBSan alone.
# The CLI suites run on the native and AVX2 paths there, not again on plain C (E2E_SKIP_ISAS).
SAN_CFLAGS := -O1 -g $(ARCH) -fno-omit-frame-pointer -fno-sanitize-recover=all
asan: deps
	@UBSAN_OPTIONS=print_stacktrace=1 LIMIT_KB=0 E2E_SKIP_ISAS=reference $(MAKE) --no-print-directory BUILD=$(BUILD)/asan REF_VIDEO=0 \
	    CFLAGS="$(SAN_CFLAGS) -fsanitize=address,undefined,float-cast-overflow" -j$(JOBS) test-c
ubsan: deps
	@UBSAN_OPTIONS=print_stacktrace=1 LIMIT_KB=0 E2E_SKIP_ISAS=reference $(MAKE) --no-print-directory BUILD=$(BUILD)/ubsan REF_VIDEO=0 \
	    CFLAGS="$(SAN_CFLAGS) -fsanitize=undefined,float-cast-overflow" -j$(JOBS) test-c

# ThreadSanitizer on tests/test_threads.c (contexts on one shared model from several pthreads),
# built with -DSAM3_NO_BLAS and without OpenMP: then every thread is one of the test's own, so TSan
# needs no suppressions (libgomp's and OpenBLAS's thread pools are not TSan-instrumented: their
# synchronisation is invisible to it and would show as false races). `make test` runs the same test
# with OpenMP and OpenBLAS.
tsan: deps $(FUZZ_SEEDS) $(BUILD)/tiny_b.sam3
	$(CC) -std=c99 $(WARN) -O2 -g -fsanitize=thread -DSAM3_NO_BLAS -pthread -o $(BUILD)/test_threads_tsan tests/test_threads.c -lm
	TSAN_OPTIONS=halt_on_error=1 $(BUILD)/test_threads_tsan $(BUILD)/fuzz_seeds/micro.sam3 8 2
	TSAN_OPTIONS=halt_on_error=1 $(BUILD)/test_threads_tsan $(BUILD)/tiny_b.sam3 3 1

# valgrind memcheck, one thread (OMP_NUM_THREADS=1: OpenMP's and OpenBLAS's pools keep per-thread
# buffers until exit, reported as "still reachable"/"possibly lost", which are not errors): the
# CLI end to end (PNG in, text + boxes, PNGs and JSON out; clicks; `sam3 track` on a 3-frame Y4M
# stream with a click, a box and overlays; a folder of images with --format coco, a shard, a rerun,
# sam3 merge and a failing list), then test_robust's quick mode, then the CLI's image
# reader on every fuzz seed (valid and hostile JPEG/PNG, other formats).
# OMP_WAIT_POLICY set, so the CLI does not run itself again (outside valgrind) to set it.
# Passes with zero errors and zero definitely/indirectly lost bytes. Built in $(BUILD)/valgrind
# without -march: valgrind 3.19 does not decode AVX-512, and its CPU has none, so the kernels run
# their AVX2 path there.
VALGRIND := env OMP_WAIT_POLICY=passive valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite,indirect \
            --show-leak-kinds=definite,indirect
VG_BUILD := $(BUILD)/valgrind
valgrind: deps
	@$(MAKE) --no-print-directory deps DEB_PKGS=valgrind
	@$(MAKE) --no-print-directory -j$(JOBS) BUILD=$(VG_BUILD) ARCH= $(VG_BUILD)/sam3 $(VG_BUILD)/test_robust $(VG_BUILD)/tiny_a.sam3 \
	    $(VG_BUILD)/video_a.sam3 $(VG_BUILD)/fuzz_image_replay
	@rm -rf $(VG_BUILD)/out_segment $(VG_BUILD)/out_points
	OMP_NUM_THREADS=1 $(VALGRIND) $(VG_BUILD)/sam3 segment -m $(VG_BUILD)/tiny_a.sam3 -i tests/data/tiny_a/image.png \
	    -t "a cat" -t dog --box 20,15,90,70 --box 5,5,30,40,neg --threshold 0 --threads 1 -q -o $(VG_BUILD)/out_segment
	OMP_NUM_THREADS=1 $(VALGRIND) $(VG_BUILD)/sam3 points -m $(VG_BUILD)/tiny_a.sam3 -i tests/data/tiny_a/image.png \
	    -p 40,30 -p 90,60,neg --box 20,15,90,70 --threads 1 -q -o $(VG_BUILD)/out_points
	$(PYTHON) tests/track_frames.py make $(VG_BUILD)/track_frames 64 48 3 420
	OMP_NUM_THREADS=1 $(VALGRIND) $(VG_BUILD)/sam3 track -m $(VG_BUILD)/video_a.sam3 -i - --point 0:1:16,24 --box 1:2:30,10,60,40 \
	    --overlay --threads 1 -q -o $(VG_BUILD)/out_track <$(VG_BUILD)/track_frames/stream.y4m
	OMP_NUM_THREADS=1 $(VALGRIND) $(VG_BUILD)/test_robust $(VG_BUILD)/tiny_a.sam3 -q
	@rm -rf $(VG_BUILD)/dataset && $(PYTHON) tests/dataset_check.py make $(VG_BUILD)/dataset/imgs && printf 'missing.png\n' >$(VG_BUILD)/dataset/imgs/bad.txt
	OMP_NUM_THREADS=1 $(VALGRIND) $(VG_BUILD)/sam3 segment -m $(VG_BUILD)/tiny_a.sam3 -i $(VG_BUILD)/dataset/imgs -t "a cat" -t dog \
	    --threshold 0 --format coco --shard 0/2 --threads 1 -q -o $(VG_BUILD)/dataset/out
	OMP_NUM_THREADS=1 $(VALGRIND) $(VG_BUILD)/sam3 segment -m $(VG_BUILD)/tiny_a.sam3 -i $(VG_BUILD)/dataset/imgs -t "a cat" -t dog \
	    --threshold 0 --format coco --threads 1 -q -o $(VG_BUILD)/dataset/out
	OMP_NUM_THREADS=1 $(VALGRIND) $(VG_BUILD)/sam3 merge -q -o $(VG_BUILD)/dataset/merged.json $(VG_BUILD)/dataset/out
	cmp $(VG_BUILD)/dataset/merged.json $(VG_BUILD)/dataset/out/coco.json
	OMP_NUM_THREADS=1 $(VALGRIND) $(VG_BUILD)/sam3 segment -m $(VG_BUILD)/tiny_a.sam3 -i @$(VG_BUILD)/dataset/imgs/bad.txt -t x \
	    --threads 1 -q -o $(VG_BUILD)/dataset/bad; test $$? = 1
	@rm -rf $(VG_BUILD)/image_seeds && $(PYTHON) tests/make_test_images.py seeds $(VG_BUILD)/image_seeds
	$(VALGRIND) $(VG_BUILD)/fuzz_image_replay $(VG_BUILD)/image_seeds

# libFuzzer on the loader and everything a loaded file reaches (tests/fuzz_load.c), with clang:
# FUZZ_TIME seconds on FUZZ_JOBS processes from the seeds and the committed corpus. New inputs go
# to $(BUILD)/fuzz/corpus, crashes to $(BUILD)/fuzz/crashes/ (then: add a case to tests/test_format.c,
# fix, `make fuzz-corpus`, commit tests/fuzz/corpus.tar.xz).
FUZZ_CC   ?= clang
FUZZ_TIME ?= 600
FUZZ_JOBS ?= 2
FUZZ_OPTS := -timeout=10 -rss_limit_mb=2048 -dict=tests/fuzz/sam3.dict
$(BUILD)/fuzz_load: tests/fuzz_load.c sam3.h | $(BUILD)
	$(FUZZ_CC) -std=c99 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer \
	    -DSAM3_NO_BLAS -o $@ tests/fuzz_load.c -lm
fuzz: $(FUZZ_SEEDS) $(FUZZ_KEPT)
	@$(MAKE) --no-print-directory deps DEB_PKGS="clang libclang-rt-dev"
	@$(MAKE) --no-print-directory $(BUILD)/fuzz_load
	@mkdir -p $(BUILD)/fuzz/corpus $(BUILD)/fuzz/crashes
	$(BUILD)/fuzz_load $(FUZZ_OPTS) -fork=$(FUZZ_JOBS) -ignore_crashes=1 -max_total_time=$(FUZZ_TIME) -print_final_stats=1 \
	    -artifact_prefix=$(BUILD)/fuzz/crashes/ $(BUILD)/fuzz/corpus $(BUILD)/fuzz_seeds $(BUILD)/fuzz_kept/corpus \
	    $(BUILD)/fuzz_kept/crashes
	@if ls $(BUILD)/fuzz/crashes | grep -q .; then echo "make fuzz: crashes in $(BUILD)/fuzz/crashes/"; exit 1; fi
# libFuzzer on the CLI's image reader (tests/fuzz_image.c over examples/image_io.c: the code
# `sam3 segment -i` and `points --mask` run), from seeds made by tests/make_test_images.py (valid
# JPEG/PNG of every kind, and the hostile files). libjpeg-turbo and libpng are Debian's, not
# instrumented: coverage guides the fuzzer through our wrapper (setjmp paths, size checks, the
# buffers), and ASan/UBSan watch every byte both libraries write into our memory.
FUZZ_IMG_OPTS := -timeout=10 -rss_limit_mb=2048 -max_len=65536
$(BUILD)/fuzz_image: tests/fuzz_image.c examples/image_io.c examples/image_io.h | $(BUILD)
	$(FUZZ_CC) -std=c99 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer \
	    -o $@ tests/fuzz_image.c examples/image_io.c $(IMG_LIBS)
fuzz-image:
	@$(MAKE) --no-print-directory deps DEB_PKGS="clang libclang-rt-dev libjpeg62-turbo-dev libpng-dev"
	@$(MAKE) --no-print-directory $(BUILD)/fuzz_image
	@rm -rf $(BUILD)/fuzz_image_seeds && $(PYTHON) tests/make_test_images.py seeds $(BUILD)/fuzz_image_seeds
	@mkdir -p $(BUILD)/fuzz_image_run/corpus $(BUILD)/fuzz_image_run/crashes
	$(BUILD)/fuzz_image $(FUZZ_IMG_OPTS) -fork=$(FUZZ_JOBS) -ignore_crashes=1 -max_total_time=$(FUZZ_TIME) -print_final_stats=1 \
	    -artifact_prefix=$(BUILD)/fuzz_image_run/crashes/ $(BUILD)/fuzz_image_run/corpus $(BUILD)/fuzz_image_seeds
	@if ls $(BUILD)/fuzz_image_run/crashes | grep -q .; then echo "make fuzz-image: crashes in $(BUILD)/fuzz_image_run/crashes/"; exit 1; fi
# libFuzzer on the CLI's YUV4MPEG2 reader (tests/fuzz_y4m.c over examples/cli_y4m.h: what
# `sam3 track -i -` runs on stdin; each first frame also through the writer of --video-out and
# back), from tests/make_y4m_seeds.py's streams.
FUZZ_Y4M_OPTS := -timeout=10 -rss_limit_mb=2048 -max_len=65536
$(BUILD)/fuzz_y4m: tests/fuzz_y4m.c examples/cli_y4m.h | $(BUILD)
	$(FUZZ_CC) -std=c99 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer \
	    -o $@ tests/fuzz_y4m.c
fuzz-y4m:
	@$(MAKE) --no-print-directory deps DEB_PKGS="clang libclang-rt-dev"
	@$(MAKE) --no-print-directory $(BUILD)/fuzz_y4m
	@rm -rf $(BUILD)/fuzz_y4m_seeds && $(PYTHON) tests/make_y4m_seeds.py $(BUILD)/fuzz_y4m_seeds
	@mkdir -p $(BUILD)/fuzz_y4m_run/corpus $(BUILD)/fuzz_y4m_run/crashes
	$(BUILD)/fuzz_y4m $(FUZZ_Y4M_OPTS) -fork=$(FUZZ_JOBS) -ignore_crashes=1 -max_total_time=$(FUZZ_TIME) -print_final_stats=1 \
	    -artifact_prefix=$(BUILD)/fuzz_y4m_run/crashes/ $(BUILD)/fuzz_y4m_run/corpus $(BUILD)/fuzz_y4m_seeds
	@if ls $(BUILD)/fuzz_y4m_run/crashes | grep -q .; then echo "make fuzz-y4m: crashes in $(BUILD)/fuzz_y4m_run/crashes/"; exit 1; fi
# libFuzzer on `sam3 merge`'s reader and JSON checker (tests/fuzz_merge.c over examples/cli_dataset.c),
# from tests/make_merge_seeds.py's files.
FUZZ_MERGE_OPTS := -timeout=10 -rss_limit_mb=2048 -max_len=65536
$(BUILD)/fuzz_merge: $(FUZZ_MERGE_DEPS) | $(BUILD)
	$(FUZZ_CC) -std=c99 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer \
	    -o $@ $(FUZZ_MERGE_SRCS)
fuzz-merge:
	@$(MAKE) --no-print-directory deps DEB_PKGS="clang libclang-rt-dev"
	@$(MAKE) --no-print-directory $(BUILD)/fuzz_merge
	@rm -rf $(BUILD)/fuzz_merge_seeds && $(PYTHON) tests/make_merge_seeds.py $(BUILD)/fuzz_merge_seeds
	@mkdir -p $(BUILD)/fuzz_merge_run/corpus $(BUILD)/fuzz_merge_run/crashes
	$(BUILD)/fuzz_merge $(FUZZ_MERGE_OPTS) -fork=$(FUZZ_JOBS) -ignore_crashes=1 -max_total_time=$(FUZZ_TIME) -print_final_stats=1 \
	    -artifact_prefix=$(BUILD)/fuzz_merge_run/crashes/ $(BUILD)/fuzz_merge_run/corpus $(BUILD)/fuzz_merge_seeds
	@if ls $(BUILD)/fuzz_merge_run/crashes | grep -q .; then echo "make fuzz-merge: crashes in $(BUILD)/fuzz_merge_run/crashes/"; exit 1; fi
# libFuzzer on the concept reader (tests/fuzz_concept.c: sam3_concept_load, then save and segment
# with what loads) for tiny_a, from the concepts test_saved_concept makes and damages.
FUZZ_CONCEPT_OPTS := -timeout=10 -rss_limit_mb=2048 -max_len=65536
$(BUILD)/fuzz_concept: tests/fuzz_concept.c tests/fuzz_replay.h sam3.h | $(BUILD)
	$(FUZZ_CC) -std=c99 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer \
	    -DSAM3_NO_BLAS -o $@ tests/fuzz_concept.c -lm
fuzz-concept: $(BUILD)/test_saved_concept $(TINY_SAM3)
	@$(MAKE) --no-print-directory deps DEB_PKGS="clang libclang-rt-dev"
	@$(MAKE) --no-print-directory $(BUILD)/fuzz_concept
	@rm -rf $(BUILD)/fuzz_concept_seeds && mkdir -p $(BUILD)/fuzz_concept_seeds $(BUILD)/fuzz_concept_run/corpus $(BUILD)/fuzz_concept_run/crashes
	$(BUILD)/test_saved_concept --model $(BUILD)/tiny_a.sam3 --data tests/data/tiny_a --seeds $(BUILD)/fuzz_concept_seeds >/dev/null
	SAM3_FUZZ_CONCEPT_MODEL=$(BUILD)/tiny_a.sam3 $(BUILD)/fuzz_concept $(FUZZ_CONCEPT_OPTS) -fork=$(FUZZ_JOBS) -ignore_crashes=1 \
	    -max_total_time=$(FUZZ_TIME) -print_final_stats=1 -artifact_prefix=$(BUILD)/fuzz_concept_run/crashes/ \
	    $(BUILD)/fuzz_concept_run/corpus $(BUILD)/fuzz_concept_seeds
	@if ls $(BUILD)/fuzz_concept_run/crashes | grep -q .; then echo "make fuzz-concept: crashes in $(BUILD)/fuzz_concept_run/crashes/"; exit 1; fi
# Minimises the committed corpus plus what `make fuzz` found (keeping only inputs that add coverage
# beyond the seeds) and every crash reproducer into tests/fuzz/corpus.tar.xz.
fuzz-corpus: $(FUZZ_SEEDS) $(FUZZ_KEPT)
	@$(MAKE) --no-print-directory $(BUILD)/fuzz_load
	rm -rf $(BUILD)/fuzz/min && mkdir -p $(BUILD)/fuzz/min/corpus $(BUILD)/fuzz/min/crashes $(BUILD)/fuzz/corpus $(BUILD)/fuzz/crashes
	cp $(BUILD)/fuzz_seeds/* $(BUILD)/fuzz/min/corpus/
	$(BUILD)/fuzz_load $(FUZZ_OPTS) -merge=1 $(BUILD)/fuzz/min/corpus $(BUILD)/fuzz_kept/corpus $(BUILD)/fuzz/corpus
	cd $(BUILD)/fuzz_seeds && for f in *; do rm -f ../fuzz/min/corpus/$$f; done
	cp $(BUILD)/fuzz_kept/crashes/* $(BUILD)/fuzz/crashes/* $(BUILD)/fuzz/min/crashes/ 2>/dev/null || true
	$(PYTHON) tests/fuzz_corpus.py pack $(BUILD)/fuzz/min tests/fuzz/corpus.tar.xz

# -Wall -Wextra -pedantic -Werror across gcc/clang, C99/C++11/C++17, NDEBUG, OpenMP, GEMM choices,
# instruction sets and -O0..-O3, and the CLI's units (tests/test_warnings.sh; ~1-2 minutes on 2 cores).
warnings:
	@if [ "$$(id -u)" = 0 ]; then $(MAKE) --no-print-directory deps DEB_PKGS="gcc g++ clang mingw-w64 gcc-aarch64-linux-gnu g++-aarch64-linux-gnu"; fi
	@sh tests/test_warnings.sh $(BUILD)

# ---- Windows: the CLI and the C tests cross-built with MinGW-w64 (no BLAS: the built-in SGEMM;
# no OpenMP: one thread), the tests run under wine on the tiny models. WINEPREFIX in $(BUILD).
MINGW_CC     ?= x86_64-w64-mingw32-gcc
MINGW_CFLAGS ?= -O2 $(ARCH)
MINGW_KTESTS := test_kernels test_gemm # one-path builds (SAM3_NO_DISPATCH) for this CPU
MINGW_DIR    := $(BUILD)/mingw
MINGW_FLAGS   = -std=c99 $(WARN) -Werror $(MINGW_CFLAGS) -DSAM3_NO_BLAS
WINE_RUN     := WINEDEBUG=-all WINEPREFIX=$(abspath $(BUILD))/wineprefix wine
$(MINGW_DIR)/%.exe: tests/%.c tests/test_util.h tests/test_dump.h sam3.h
	@mkdir -p $(MINGW_DIR)
	$(MINGW_CC) $(MINGW_FLAGS) $(if $(filter $(MINGW_KTESTS),$*),$(KARCH) -DSAM3_NO_DISPATCH) -o $@ $< -lm
# and with OpenMP (libgomp-1.dll from the compiler's directory, through WINEPATH)
$(MINGW_DIR)/test_parity_omp.exe: tests/test_parity.c tests/test_util.h tests/test_dump.h sam3.h
	@mkdir -p $(MINGW_DIR)
	$(MINGW_CC) $(MINGW_FLAGS) -fopenmp -o $@ $< -lm
$(MINGW_DIR)/sam3.exe: $(CLI_SRCS) $(CLI_HDRS)
	@mkdir -p $(MINGW_DIR)
	$(MINGW_CC) $(MINGW_FLAGS) $(STB_INC) -o $@ $(CLI_SRCS) -lm
test-mingw: deps $(TINY_SAM3) $(SAM1_SAM3)
	@$(MAKE) --no-print-directory deps DEB_PKGS="mingw-w64 wine wine64"
	@$(MAKE) --no-print-directory -j$(JOBS) $(MINGW_DIR)/sam3.exe $(MINGW_DIR)/test_format.exe $(MINGW_DIR)/test_parity.exe \
	    $(MINGW_DIR)/test_robust.exe $(MINGW_DIR)/test_gemm.exe $(MINGW_DIR)/test_parity_omp.exe $(MINGW_DIR)/test_kernels.exe
	@$(WINE_RUN) $(MINGW_DIR)/test_gemm.exe
	@$(WINE_RUN) $(MINGW_DIR)/test_kernels.exe $(BUILD)/tiny_a.sam3
	@$(WINE_RUN) $(MINGW_DIR)/test_format.exe $(TINY_SAM3)
	@for n in $(TINY) $(SAM1_TINY); do $(WINE_RUN) $(MINGW_DIR)/test_parity.exe --model $(BUILD)/$$n.sam3 \
	    --data tests/data/$$n || exit 1; done
	@$(WINE_RUN) $(MINGW_DIR)/test_robust.exe $(BUILD)/tiny_a.sam3 -q
	@for n in tiny_a sam1_a; do out=$$(WINEPATH="$$(dirname $$($(MINGW_CC) -print-file-name=libgomp-1.dll));$$(dirname \
	    $$($(MINGW_CC) -print-file-name=libwinpthread-1.dll))" $(WINE_RUN) $(MINGW_DIR)/test_parity_omp.exe --model $(BUILD)/$$n.sam3 \
	    --data tests/data/$$n) || { echo "$$out"; exit 1; }; echo "$$out" | tail -1 | sed 's/^/OpenMP: /'; done
	@rm -rf $(MINGW_DIR)/out && $(WINE_RUN) $(MINGW_DIR)/sam3.exe segment -m $(BUILD)/tiny_a.sam3 -i tests/data/tiny_a/image.png \
	    -t "a cat" --threshold 0 -q -o $(MINGW_DIR)/out && test -s $(MINGW_DIR)/out/results.json && test -s $(MINGW_DIR)/out/overlay.png
	@echo "test-mingw: the CLI wrote $(MINGW_DIR)/out/ under wine"

# ---- aarch64 (or another CROSS with its QEMU): the C tests cross-built with $(CROSS)gcc against
# the target's OpenBLAS (Debian multiarch: libopenblas-dev:arm64) and run under qemu-user on the
# tiny models. QEMU_LD_PREFIX=/ : the multiarch libc that libopenblas:arm64 and libgomp1:arm64
# link against (the cross toolchain's own copy in /usr/aarch64-linux-gnu, mixed with those, hangs
# at the first thread).
CROSS_TRIPLET ?= aarch64-linux-gnu
CROSS_DEBARCH ?= arm64
QEMU          ?= qemu-aarch64
CROSS_DIR     := $(BUILD)/$(CROSS_TRIPLET)
CROSS_RUN     := QEMU_LD_PREFIX=/ OMP_WAIT_POLICY=passive $(QEMU)
# An AVX2-only x86-64 CPU (no AVX-512), as many laptops and CI machines: this build's own binaries
# under qemu-user's Haswell model (cpuid without AVX-512), which must pick the AVX2 path by
# themselves. OMP_WAIT_POLICY set: the CLI would otherwise run itself again natively. The features
# taken off are ones qemu's TCG cannot give: asked for, each prints a warning on stderr, which the
# CLI suites would read as the program's own output.
X86_QEMU      ?= qemu-x86_64 -cpu Haswell,-pcid,-tsc-deadline,-x2apic,-hle,-invpcid,-rtm
X86_RUN       := OMP_WAIT_POLICY=passive $(X86_QEMU)
X86_DIR       := $(BUILD)/x86_cpu
# qemu's CPU models: one with FEAT_BF16 (HWCAP2_BF16: the path neonbf16) and a plain ARMv8 one
# (neon). test_gemm runs with short bf16 k blocks (test_gemm_kb): the same code as its default
# blocks, whose products would take minutes under qemu.
QEMU_BF16     ?= -cpu max
QEMU_PLAIN    ?= -cpu cortex-a57
CROSS_BINS    := $(CROSS_DIR)/test_format $(CROSS_DIR)/test_parity $(CROSS_DIR)/test_gemm_kb $(CROSS_DIR)/test_robust \
                 $(CROSS_DIR)/test_parity_noblas $(CROSS_DIR)/sam3
CROSS_BINS    += $(CROSS_DIR)/test_kernels
test-cross: deps $(TINY_SAM3) $(SAM1_SAM3) $(BUILD)/tiny_a_bf16.sam3 $(BUILD)/tiny_b_bf16.sam3 $(BUILD)/sam3 $(BUILD)/test_parity \
            $(VIDEO_SAM3) $(BUILD)/test_concept
	@if [ "$$(id -u)" = 0 ] && ! dpkg --print-foreign-architectures | grep -qx $(CROSS_DEBARCH); then \
	    dpkg --add-architecture $(CROSS_DEBARCH) && apt-get update -q; fi
	@$(MAKE) --no-print-directory deps DEB_PKGS="gcc-$(CROSS_TRIPLET) qemu-user libopenblas-dev:$(CROSS_DEBARCH) libgomp1:$(CROSS_DEBARCH) \
	    libjpeg62-turbo-dev:$(CROSS_DEBARCH) libpng-dev:$(CROSS_DEBARCH)"
	@$(MAKE) --no-print-directory -j$(JOBS) CROSS=$(CROSS_TRIPLET)- BUILD=$(CROSS_DIR) $(CROSS_BINS)
	@$(CROSS_RUN) $(QEMU_BF16) $(CROSS_DIR)/test_gemm_kb
	@$(CROSS_RUN) $(QEMU_BF16) $(CROSS_DIR)/test_kernels $(BUILD)/tiny_a.sam3
	@$(CROSS_RUN) $(CROSS_DIR)/test_format $(TINY_SAM3)
	@for n in $(TINY) $(SAM1_TINY); do $(CROSS_RUN) $(CROSS_DIR)/test_parity --model $(BUILD)/$$n.sam3 --data tests/data/$$n || exit 1; \
	    out=$$($(CROSS_RUN) $(CROSS_DIR)/test_parity_noblas --model $(BUILD)/$$n.sam3 --data tests/data/$$n) || \
	    { echo "$$out"; exit 1; }; echo "$$out" | tail -1 | sed 's/^/no BLAS: /'; done
	@$(CROSS_RUN) $(CROSS_DIR)/test_robust $(BUILD)/tiny_a.sam3 -q
	@$(CROSS_RUN) $(QEMU_PLAIN) $(CROSS_DIR)/sam3 --version | grep -qx 'kernels: neon' || \
	    { echo "test-cross: sam3 did not pick the NEON path on a plain ARMv8 CPU ($(QEMU_PLAIN))"; exit 1; }
	@$(CROSS_RUN) $(QEMU_BF16) $(CROSS_DIR)/sam3 --version | grep -qx 'kernels: neonbf16' || \
	    { echo "test-cross: sam3 did not pick the neonbf16 path on a CPU with BF16 ($(QEMU_BF16))"; exit 1; }
	@SAM3_ISA=neon $(CROSS_RUN) $(QEMU_BF16) $(CROSS_DIR)/sam3 --version | grep -qx 'kernels: neon' || \
	    { echo "test-cross: SAM3_ISA=neon did not force the NEON path"; exit 1; }
	@out=$$($(CROSS_RUN) $(QEMU_BF16) $(CROSS_DIR)/test_parity --model $(BUILD)/tiny_a_bf16.sam3 --data tests/data/tiny_a --bf16) || \
	    { echo "$$out"; exit 1; }; echo "$$out" | tail -1 | sed 's/^/bf16 file, neonbf16: /'
	@out=$$($(CROSS_RUN) $(QEMU_BF16) $(CROSS_DIR)/test_parity --model $(BUILD)/tiny_b_bf16.sam3 --data tests/data/tiny_b --bf16 --bf16-attention) || \
	    { echo "$$out"; exit 1; }; echo "$$out" | tail -1 | sed 's/^/bf16 file, neonbf16, attention in bf16: /'
	@for t in 1 2; do rm -rf $(CROSS_DIR)/out_t$$t && $(CROSS_RUN) $(QEMU_BF16) $(CROSS_DIR)/sam3 segment -m $(BUILD)/tiny_a_bf16.sam3 \
	    -i tests/data/tiny_a/image.png -t "a cat" --threshold 0 -q --threads $$t -o $(CROSS_DIR)/out_t$$t || exit 1; done; \
	    diff -r -q $(CROSS_DIR)/out_t1 $(CROSS_DIR)/out_t2 || { echo "test-cross: neonbf16: --threads 2 changed the results"; exit 1; }
	@out=$$(SAM3_ISA=reference $(CROSS_RUN) $(CROSS_DIR)/test_parity --model $(BUILD)/tiny_a.sam3 --data tests/data/tiny_a) || \
	    { echo "$$out"; exit 1; }; echo "$$out" | tail -1 | sed 's/^/SAM3_ISA=reference: /'
	@rm -rf $(CROSS_DIR)/out && $(CROSS_RUN) $(CROSS_DIR)/sam3 segment -m $(BUILD)/tiny_a.sam3 -i tests/data/tiny_a/image.png \
	    -t "a cat" --threshold 0 -q -o $(CROSS_DIR)/out && test -s $(CROSS_DIR)/out/results.json
	@echo "test-cross: $(CROSS_TRIPLET) tests passed under $(QEMU)"
	@$(X86_RUN) $(BUILD)/sam3 --version 2>/dev/null | grep -qx 'kernels: avx2' || \
	    { echo "test-cross: on an AVX2-only CPU ($(X86_QEMU)) sam3 did not pick the AVX2 path"; exit 1; }
	@$(X86_RUN) $(BUILD)/test_parity --model $(BUILD)/tiny_a_bf16.sam3 --data tests/data/tiny_a --bf16 >$(BUILD)/x86_cpu.log 2>&1 || \
	    { tail -n 15 $(BUILD)/x86_cpu.log; exit 1; }
	@echo "test-cross: an AVX2-only x86-64 CPU ($(X86_QEMU)): kernels: avx2; bf16 file $$(tail -n 1 $(BUILD)/x86_cpu.log)"
	@# the track suite (frames, Y4M, prompts, --threads 1, 2 and 4 the same bytes) with this build's
	@# sam3 and test_concept under that CPU, and OpenBLAS choosing its kernels from the same cpuid
	@rm -rf $(X86_DIR) && mkdir -p $(X86_DIR) && for f in $(VIDEO_SAM3) $(BUILD)/tiny_a.sam3; do ln -s "$$(pwd)/$$f" $(X86_DIR)/; done && \
	    for b in sam3 test_concept; do printf '#!/bin/sh\nexec env %s %s "$$@"\n' "$(X86_RUN)" "$$(pwd)/$(BUILD)/$$b" >$(X86_DIR)/$$b && \
	    chmod +x $(X86_DIR)/$$b || exit 1; done
	@out=$$(sh tests/test_track.sh $(X86_DIR) 2>&1) || { echo "$$out" | tail -n 20; exit 1; }; \
	    echo "$$out" | tail -n 1 | sed 's/^/an AVX2-only x86-64 CPU: /'

# Segment the bundled image with the tiny model into out/demo/ (results.json, mask PNGs,
# overlay.png), then follow one clicked object with the tiny video model through 6 frames panned
# across that image (tests/make_video_frames.c) into out/demo-track/ (tracks.jsonl, overlays/,
# masks/, overlay.y4m). Their weights are random numbers, so the masks are meaningless: the demo
# shows that everything runs and what the output looks like. With real weights:
#   build/sam3 segment -m weights/sam3.sam3 -i photo.jpg -t "yellow school bus" -o out/bus
demo: deps all $(BUILD)/tiny_a.sam3 $(VIDEO_SAM3) $(BUILD)/make_video_frames
	$(BUILD)/sam3 segment -m $(BUILD)/tiny_a.sam3 -i tests/data/tiny_a/image.png -t "a cat" --box 20,15,90,70 \
	    --threshold 0.25 --force -o out/demo
	rm -rf $(BUILD)/demo_frames && mkdir -p $(BUILD)/demo_frames
	$(BUILD)/make_video_frames tests/data/tiny_a/image.png 6 $(BUILD)/demo_frames >/dev/null
	$(BUILD)/sam3 track -m $(VIDEO_SAM3) -i $(BUILD)/demo_frames --point 0:1:28,25 --overlay \
	    --video-out out/demo-track/overlay.y4m --force -q -o out/demo-track
	@echo "make demo: wrote out/demo/ and out/demo-track/ (random-weight models: the masks are meaningless; see README.md)"

# Convert the real checkpoint in weights/ (see weights/README.md).
convert:
	$(PYTHON) tools/convert.py weights weights/sam3.sam3

# Per-stage timings (`sam3 bench`: medians, peak RSS, GFLOP/s) of $(BENCH_MODEL): weights/sam3.sam3
# when present, else a full-size SAM 3 with seeded random weights (same shapes, so the same speed)
# made once into $(BUILD)/bench/ (~7 GB of disk, a few minutes; not cleaned up automatically;
# vocabulary from $(SHARED)/clip, or a synthetic one without it). BENCH_SAM1=FILE also benches a
# converted SAM 1 file; BENCH_ARGS passes options (e.g. BENCH_ARGS="--threads 4 --runs 5").
BENCH_MODEL ?= $(firstword $(wildcard weights/sam3.sam3) $(BUILD)/bench/sam3.sam3)
BENCH_SAM1  ?=
BENCH_ARGS  ?=
bench: deps all $(BENCH_MODEL) $(BENCH_SAM1)
	@echo "machine: $$(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | sed 's/^[^:]*: *//'), $$(nproc) cores; $$(date '+%Y-%m-%d %H:%M:%S %z')"
	$(BUILD)/sam3 bench -m $(BENCH_MODEL) $(BENCH_ARGS)
	$(if $(BENCH_SAM1),$(BUILD)/sam3 bench -m $(BENCH_SAM1) $(BENCH_ARGS))
$(BUILD)/bench/src/model.safetensors:
	@mkdir -p $(BUILD)/bench && rm -rf $(BUILD)/bench/src.tmp
	$(PYTHON) tools/make_random_checkpoint.py $(BUILD)/bench/src.tmp \
	    --vocab $(if $(wildcard $(SHARED)/clip/vocab.json),$(SHARED)/clip,synthetic)
	rm -rf $(BUILD)/bench/src && mv $(BUILD)/bench/src.tmp $(BUILD)/bench/src
$(BUILD)/bench/sam3.sam3: $(BUILD)/bench/src/model.safetensors tools/convert.py tools/sam3file.py
	$(PYTHON) tools/convert.py --quiet $(BUILD)/bench/src $@.tmp && mv $@.tmp $@

# Debug build of the CLI with sanitizers.
debug:
	$(MAKE) BUILD=build/debug CFLAGS="-O0 -g -fsanitize=address,undefined" all

clean:
	rm -rf $(BUILD) out
