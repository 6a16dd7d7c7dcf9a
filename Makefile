# sam3.h - build, test and demo. Plain make; every target has a comment.
# On a fresh Debian 12 machine, as root: `make demo` and `make test` install what they need.

CC       ?= cc
CXX      ?= c++
ARCH     ?= -march=native
CFLAGS   ?= -O3 $(ARCH) -g
WARN     := -Wall -Wextra -pedantic
OPENMP   ?= 1
PYTHON   ?= /usr/bin/python3
# stb headers as system headers: stb_easy_font.h is not -Wextra clean, and its warnings are not ours
STB_INC  ?= -isystem /usr/include/stb
BUILD    ?= build
DEB_PKGS := gcc g++ make libopenblas-dev libopenblas0-openmp libstb-dev python3-numpy
# OpenBLAS: Debian's default libopenblas is the pthread build, whose idle threads spin while our
# OpenMP loops run (measured: vision encoder 44 s vs 28 s on 2 cores); with OPENMP=1 we link the
# OpenMP build of the same library when it is installed, so both share one thread pool.
OPENBLAS_OMP_DIR ?= /usr/lib/x86_64-linux-gnu/openblas-openmp
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
TESTS     := $(BUILD)/test_format $(BUILD)/test_parity $(BUILD)/test_tokenizer $(BUILD)/test_compile_c $(BUILD)/test_compile_cpp
EXAMPLES  := $(BUILD)/embed_min $(BUILD)/camera_loop
SHARED    ?= ../shared

.PHONY: all deps examples test demo convert bench asan ubsan clean debug

# The command-line tool.
all: $(BUILD)/sam3

# Install the Debian packages we build against, when missing (needs root and apt-get).
deps:
	@if dpkg -s $(DEB_PKGS) >/dev/null 2>&1; then :; else \
	  echo "make deps: installing $(DEB_PKGS)"; \
	  if [ "$$(id -u)" != 0 ]; then echo "make deps: run as root (or install: $(DEB_PKGS))" >&2; exit 1; fi; \
	  DEBIAN_FRONTEND=noninteractive apt-get update -q && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $(DEB_PKGS); fi

$(BUILD):
	@mkdir -p $(BUILD)

$(BUILD)/sam3: examples/sam3_cli.c sam3.h | $(BUILD)
	$(CC) $(C_FLAGS) $(STB_INC) -o $@ examples/sam3_cli.c $(LIBS)

# The embedding examples (built warning-free: -Werror): embed_min.c is the QUICK START of sam3.h;
# camera_loop.c runs one context per thread on RGBA frames with deadlines.
examples: $(EXAMPLES)
$(BUILD)/embed_min: examples/embed_min.c sam3.h | $(BUILD)
	$(CC) $(C_FLAGS) -Werror -I. $(STB_INC) -o $@ examples/embed_min.c $(LIBS)
$(BUILD)/camera_loop: examples/camera_loop.c sam3.h | $(BUILD)
	$(CC) $(C_FLAGS) -Werror -I. -pthread -o $@ examples/camera_loop.c $(LIBS)

# Tiny random-weight models converted from the committed reference checkpoints.
$(BUILD)/%.sam3: tests/data/%/model.safetensors tests/data/%/config.json tools/convert.py tools/sam3file.py | $(BUILD)
	$(PYTHON) tools/convert.py --quiet tests/data/$* $@

$(BUILD)/test_format: tests/test_format.c tests/test_util.h sam3.h | $(BUILD)
	$(CC) $(C_FLAGS) -o $@ tests/test_format.c $(LIBS)
$(BUILD)/test_parity: tests/test_parity.c tests/test_util.h sam3.h | $(BUILD)
	$(CC) $(C_FLAGS) -o $@ tests/test_parity.c $(LIBS)
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

# Everything hermetic: no network, no GPU.
test: deps all $(TESTS) $(EXAMPLES) $(TINY_SAM3) $(SAM1_SAM3) $(BUILD)/tok_synth.sam3
	@$(PYTHON) tests/test_convert.py
	@$(BUILD)/test_compile_c && $(BUILD)/test_compile_cpp
	@$(BUILD)/test_format $(TINY_SAM3)
	@$(PYTHON) tests/make_tokenizer_file.py $(SHARED)/clip $(BUILD)/tok_clip.sam3
	@$(BUILD)/test_tokenizer tests/data/tokenizer_golden_synth.txt $(BUILD)/tok_synth.sam3 \
	    tests/data/tokenizer_golden_clip.txt $(BUILD)/tok_clip.sam3 --model $(BUILD)/tiny_a.sam3
	@$(BUILD)/test_parity $(TINY) $(SAM1_TINY)
	@PYTHON=$(PYTHON) sh tests/test_examples.sh $(BUILD)
	@PYTHON=$(PYTHON) sh tests/test_cli.sh $(BUILD)
	@$(PYTHON) tests/test_quickstart.py sam3.h examples/embed_min.c

# Segment the bundled image with the tiny model into out/demo/ (results.json, mask PNGs,
# overlay.png). Its weights are random numbers, so the masks are meaningless: the demo shows that
# everything runs and what the output looks like. With real weights:
#   build/sam3 segment -m weights/sam3.sam3 -i photo.jpg -t "yellow school bus" -o out/bus
demo: deps all $(BUILD)/tiny_a.sam3
	$(BUILD)/sam3 segment -m $(BUILD)/tiny_a.sam3 -i tests/data/tiny_a/image.png -t "a cat" --box 20,15,90,70 \
	    --threshold 0.25 -o out/demo
	@echo "make demo: wrote out/demo/ (random-weight model: the masks are meaningless; see README.md)"

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
