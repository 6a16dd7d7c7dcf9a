"""Seed files for `sam3 merge`'s fuzz target (tests/fuzz_merge.c) and its replay in `make test`:
per-image coco.json files as `sam3 segment --format coco` writes them (one item a line), and
damaged ones (edited lines, dangling ids, no image count, deep nesting, bad strings and numbers).
    make_merge_seeds.py DIR
"""
import os
import sys

GOOD = """{
  "generator": "sam3 segment 0.1.0",
  "settings": "0123456789abcdef",
  "run": {"images": 3, "shard": "1/3"},
  "info": {"description": "sam3.h", "version": "0.1.0", "model": "m.sam3", "year": 2026, "date_created": "2026-01-02"},
  "licenses": [],
  "images": [
    {"id": 2, "file_name": "imgs/b \\"q\\" \\u00e9.png", "width": 64, "height": 48}
  ],
  "annotations": [
    {"id": 1, "image_id": 2, "category_id": 1, "segmentation": {"size": [48, 64], "counts": "0`0[1;5"}, "area": 12, "bbox": [1.5, 2, 3e1, 4], "score": 0.25, "iscrowd": 0},
    {"id": 2, "image_id": 2, "category_id": 2, "segmentation": {"size": [48, 64], "counts": ""}, "area": 0, "bbox": [0, 0, 0, 0], "score": -1.5E-3, "iscrowd": 0}
  ],
  "categories": [
    {"id": 1, "name": "a cat"},
    {"id": 2, "name": "dog"}
  ]
}
"""


def main():
    d = sys.argv[1]
    os.makedirs(d, exist_ok=True)
    seeds = {
        "good.json": GOOD,
        "no_shard.json": GOOD.replace(', "shard": "1/3"', ""),
        "no_run.json": GOOD.replace('  "run": {"images": 3, "shard": "1/3"},\n', ""),
        "dangling.json": GOOD.replace('"image_id": 2, "category_id": 1', '"image_id": 7, "category_id": 1'),
        "bad_category.json": GOOD.replace('"category_id": 2', '"category_id": 9'),
        "not_json.json": GOOD.replace('"area": 12', '"area": [12'),
        "deep.json": GOOD.replace('"iscrowd": 0}', '"iscrowd": ' + "[" * 100 + "]" * 100 + "}", 1),
        "bad_escape.json": GOOD.replace("\\u00e9", "\\x"),
        "bad_number.json": GOOD.replace("3e1", "3e"),
        "id_over_count.json": GOOD.replace('"images": 3', '"images": 1'),
        "two_images.json": GOOD.replace('  ],\n  "annotations"', '    {"id": 3, "file_name": "c.png", "width": 1, "height": 1}\n  ],\n  "annotations"', 1),
        "trailing.json": GOOD.replace('"iscrowd": 0},', '"iscrowd": 0} x,', 1),
        "category_ids_out_of_order.json": GOOD.replace('{"id": 2, "name": "dog"}', '{"id": 3, "name": "dog"}'),
        "empty.json": "",
        "no_info.json": GOOD.replace(GOOD.splitlines()[4] + "\n", "").replace('  "licenses": [],\n', ""),  # an older version's
        "bad_info.json": GOOD.replace('"info": {', '"info": [{', 1),
        "two_infos.json": GOOD.replace('  "licenses"', GOOD.splitlines()[4] + '\n  "licenses"', 1),
        "licensed.json": GOOD.replace('"licenses": []', '"licenses": [{"id": 1}]', 1),
    }
    for name, text in seeds.items():
        with open(os.path.join(d, name), "w", encoding="utf-8") as f:
            f.write(text)


if __name__ == "__main__":
    main()
