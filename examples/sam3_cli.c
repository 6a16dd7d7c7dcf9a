/* sam3 - command-line front end of sam3.h.

   build/sam3 info -m FILE
   build/sam3 --help | --version

   Exit codes: 0 success, 1 runtime failure, 2 usage error; one line on stderr names the problem. */
#define SAM3_IMPLEMENTATION
#include "../sam3.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CLI_OK 0
#define CLI_FAIL 1
#define CLI_USAGE 2

static int g_quiet;

static void cli_log(void *user, int level, const char *msg) {
    (void)user;
    if (level == SAM3_LOG_ERROR || !g_quiet) fprintf(stderr, "sam3: %s\n", msg);
}

static int usage_error(const char *cmd, const char *fmt, const char *arg) {
    fprintf(stderr, "sam3%s%s: ", cmd ? " " : "", cmd ? cmd : "");
    fprintf(stderr, fmt, arg ? arg : "");
    fprintf(stderr, " (try 'sam3 %s--help')\n", cmd ? cmd : "");
    return CLI_USAGE;
}

static const char *MAIN_HELP =
    "usage: sam3 COMMAND [OPTIONS]\n"
    "\n"
    "Meta SAM 3 segmentation in plain C (sam3.h " SAM3_VERSION_STRING ").\n"
    "\n"
    "commands:\n"
    "  info      print a .sam3 file's config, tensor count, dtypes and size\n"
    "  tokenize  print the CLIP token ids of a text prompt\n"
    "\n"
    "options:\n"
    "  --help     this text (COMMAND --help for a command)\n"
    "  --version  print the version\n";

static const char *INFO_HELP =
    "usage: sam3 info -m FILE [--tensors]\n"
    "\n"
    "Loads and validates a .sam3 file and prints its config, tensor count, dtypes and byte size.\n"
    "  -m, --model FILE  the .sam3 file\n"
    "  --tensors         also list every tensor (name, dtype, shape)\n";

static const char *DTYPES[5] = {"f32", "f16", "bf16", "i32", "u8"};

static int cmd_info(int argc, char **argv) {
    const char *path = NULL;
    int i, list = 0, n, counts[8] = {0};
    sam3_load_options lo = sam3_load_options_default();
    sam3_model *m;
    sam3_result rc;
    uint64_t total = 0;
    char val[1024];
    for (i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fputs(INFO_HELP, stdout);
            return CLI_OK;
        } else if (!strcmp(argv[i], "-m") || !strcmp(argv[i], "--model")) {
            if (++i >= argc) return usage_error("info", "%s needs a file name", argv[i - 1]);
            path = argv[i];
        } else if (!strcmp(argv[i], "--tensors")) {
            list = 1;
        } else {
            return usage_error("info", "unknown option '%s'", argv[i]);
        }
    }
    if (!path) return usage_error("info", "missing -m FILE%s", NULL);
    lo.log = cli_log;
    rc = sam3_load(path, &lo, &m);
    if (rc != SAM3_OK) {
        fprintf(stderr, "sam3 info: cannot load '%s': %s\n", path, sam3_result_string(rc));
        return CLI_FAIL;
    }
    printf("file: %s (%llu bytes)\n", path, (unsigned long long)sam3_model_file_size(m));
    printf("config:\n");
    n = sam3_model_config_count(m);
    for (i = 0; i < n; i++) {
        const char *key = sam3_model_config_entry(m, i, val, sizeof(val));
        printf("  %-48s %s\n", key, val);
    }
    n = sam3_model_tensor_count(m);
    for (i = 0; i < n; i++) {
        sam3_tensor_info t;
        int d;
        sam3_model_tensor_info(m, i, &t);
        total += t.nbytes;
        for (d = 0; d < 5; d++)
            if (!strcmp(t.dtype, DTYPES[d])) counts[d]++;
        if (list) {
            printf("  %-72.*s %-4s [", t.name_len, t.name, t.dtype);
            for (d = 0; d < t.ndim; d++) printf("%s%lld", d ? "," : "", (long long)t.shape[d]);
            printf("]\n");
        }
    }
    printf("tensors: %d (f32 %d, f16 %d, bf16 %d, i32 %d, u8 %d), %llu data bytes\n", n, counts[0], counts[1], counts[2],
           counts[3], counts[4], (unsigned long long)total);
    sam3_free(m);
    return CLI_OK;
}

static const char *TOKENIZE_HELP =
    "usage: sam3 tokenize -m FILE TEXT\n"
    "\n"
    "Prints the ids of TEXT (BOS and EOS included, no padding) space-separated on one line, exactly\n"
    "as the reference CLIP tokenizer. Prompts longer than the model's context (32 ids) are cut to\n"
    "fit with EOS kept, and a note goes to stderr.\n"
    "  -m, --model FILE  the .sam3 file (its vocabulary is used)\n";

static int cmd_tokenize(int argc, char **argv) {
    const char *path = NULL, *text = NULL;
    int i, n = 0;
    int32_t ids[4096];
    sam3_load_options lo = sam3_load_options_default();
    sam3_model *m;
    sam3_result rc;
    for (i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fputs(TOKENIZE_HELP, stdout);
            return CLI_OK;
        } else if (!strcmp(argv[i], "-m") || !strcmp(argv[i], "--model")) {
            if (++i >= argc) return usage_error("tokenize", "%s needs a file name", argv[i - 1]);
            path = argv[i];
        } else if (argv[i][0] == '-' && argv[i][1] && strcmp(argv[i], "--")) {
            return usage_error("tokenize", "unknown option '%s'", argv[i]);
        } else {
            if (!strcmp(argv[i], "--") && i + 1 < argc) i++;
            if (text) return usage_error("tokenize", "give one TEXT argument (quote it), got also '%s'", argv[i]);
            text = argv[i];
        }
    }
    if (!path) return usage_error("tokenize", "missing -m FILE%s", NULL);
    if (!text) return usage_error("tokenize", "missing TEXT%s", NULL);
    lo.log = cli_log;
    if ((rc = sam3_load(path, &lo, &m)) != SAM3_OK) {
        fprintf(stderr, "sam3 tokenize: cannot load '%s': %s\n", path, sam3_result_string(rc));
        return CLI_FAIL;
    }
    rc = sam3_tokenize(m, text, ids, 4096, &n);
    if (rc < 0) {
        fprintf(stderr, "sam3 tokenize: %s\n", sam3_result_string(rc));
        sam3_free(m);
        return CLI_FAIL;
    }
    for (i = 0; i < n; i++) printf("%s%d", i ? " " : "", (int)ids[i]);
    printf("\n");
    if (rc == SAM3_TRUNCATED) fprintf(stderr, "sam3 tokenize: note: the prompt was truncated to %d ids\n", n);
    sam3_free(m);
    return CLI_OK;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fputs(MAIN_HELP, stderr);
        return CLI_USAGE;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        fputs(MAIN_HELP, stdout);
        return CLI_OK;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("sam3 %s (file format %d)\n", sam3_version_string(), SAM3_FILE_FORMAT_VERSION);
        return CLI_OK;
    }
    if (!strcmp(argv[1], "info")) return cmd_info(argc - 2, argv + 2);
    if (!strcmp(argv[1], "tokenize")) return cmd_tokenize(argc - 2, argv + 2);
    return usage_error(NULL, "unknown command '%s'", argv[1]);
}
