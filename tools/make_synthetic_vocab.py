#!/usr/bin/python3
"""Write a small CLIP-format BPE vocabulary for tests (the real CLIP files are not ours to ship).

Usage: /usr/bin/python3 tools/make_synthetic_vocab.py OUTDIR [--merges N]   (default N = 1000)

Writes OUTDIR/vocab.json and OUTDIR/merges.txt laid out exactly like OpenAI CLIP's:
  ids 0..255     the 256 GPT-2 byte characters, in bytes_to_unicode() order
  ids 256..511   the same with "</w>" appended
  ids 512..      one token per merge, in merge order (the merge's two strings joined)
  then           <|startoftext|>, <|endoftext|>
merges.txt starts with "#version: 0.2" and lists one "left right" pair per line, rank order.

The merges come from plain BPE (most frequent adjacent pair, ties broken by the pair's
strings) over the small built-in multilingual corpus below, pre-tokenized roughly as CLIP
does (NFC, lowercase, letter runs, single digits, runs of other symbols; "</w>" on each
word's last symbol).  Real words get merges, while most other text still falls back to
byte symbols.  A pair whose joined string is already a token is skipped, so every token
string is unique.  Standard library only; the output is deterministic.
"""
import json
import os
import sys
import unicodedata

CORPUS = """
a photo of a cat. a photo of a dog. a photo of the cat sitting on the red sofa.
yellow school bus, red car, blue truck, white van, black bicycle, green traffic light.
person wearing a red hat; person holding an umbrella; person riding a horse on the beach.
the man and the woman are walking their dog in the park at 7:30 in the morning.
two cats, three dogs, 4 birds, 5 horses, 10 apples and 12 oranges on the table.
it's a sunny day. they're playing football. we've got 2 tickets. i'm here. you'll see. he'd go.
don't touch the glass! what's that? where's the ball? isn't it nice? the kids' toys.
a close-up photo of a coffee cup (espresso) with milk foam & a spoon -- 100% arabica.
e-mail: info@example.com, price $19.99, 3.5 kg, 2024-06-01, #hashtag, 50/50, a+b=c.
the quick brown fox jumps over the lazy dog. the dog sleeps under the tree near the house.
a red apple, a green pear, a yellow banana, an orange orange, a bowl of fruit on a wooden table.
people crossing the street, cars parked along the road, a bus stop with a bench and a sign.
segmentation of every chair, table, window, door, lamp, plant, book, bottle and cup in the room.
café crème, résumé, naïve, élève, à la carte, crème brûlée, déjà vu, façade, garçon.
el niño come una manzana. la señora está en la playa. año nuevo, corazón, canción, mañana.
über den straßen fährt ein großer gelber schulbus. schöne grüße aus münchen. mädchen, jungen.
pão de açúcar, coração, ação, são paulo, lição, irmã, avô, avó.
кошка сидит на красном диване. собака бежит по парку. красная шапка, жёлтый автобус.
привет мир, большой дом, маленькая машина, человек в красной шапке.
η γάτα κάθεται στον καναπέ. ο σκύλος τρέχει στο πάρκο. καλημέρα κόσμε, ελληνικά.
一只猫坐在红色的沙发上。一只狗在公园里跑。黄色的校车。戴红帽子的人。
猫が赤いソファに座っている。犬が公園を走っている。黄色いスクールバス。こんにちは世界。
고양이가 빨간 소파에 앉아 있다. 노란 스쿨버스. 안녕하세요 세계.
قطة تجلس على الأريكة الحمراء. كلب يركض في الحديقة. حافلة مدرسية صفراء. مرحبا بالعالم.
חתול יושב על הספה האדומה. שלום עולם.
बिल्ली लाल सोफे पर बैठी है। नमस्ते दुनिया।
แมวนั่งบนโซฟาสีแดง สวัสดีชาวโลก
a cat 🐱 and a dog 🐶 on the sofa 🛋️, a red heart ❤️, thumbs up 👍👍, smile 😀😀😀.
family 👨‍👩‍👧 at the beach 🏖️ under the sun ☀️, party 🎉🎉 with cake 🎂.
"""

def bytes_to_unicode():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return [(b, chr(c)) for b, c in zip(bs, cs)]


def _cls(ch):
    cat = unicodedata.category(ch)
    if ch.isspace():
        return "s"
    if cat[0] == "L":
        return "l"
    if cat in ("Nd", "Nl", "No"):
        return "n"
    return "o"


def pre_tokenize(text):
    """Roughly CLIP's pre-tokenizer: contractions, letter runs, single digits, symbol runs."""
    text = unicodedata.normalize("NFC", text).lower()
    words, i = [], 0
    while i < len(text):
        for c in ("'s", "'t", "'re", "'ve", "'m", "'ll", "'d"):
            if text.startswith(c, i):
                words.append(c)
                i += len(c)
                break
        else:
            k = _cls(text[i])
            j = i + 1
            if k in ("l", "o"):
                while j < len(text) and _cls(text[j]) == k:
                    j += 1
            if k != "s":
                words.append(text[i:j])
            i = j
    return words


def train(n_merges):
    byte_char = dict(bytes_to_unicode())
    counts = {}
    for line_no, line in enumerate(l for l in CORPUS.split("\n") if l.strip()):
        weight = 3 if line_no < 12 else 1  # the English lines, so common words merge first
        for w in pre_tokenize(line):
            syms = [byte_char[b] for b in w.encode("utf-8")]
            syms[-1] += "</w>"
            counts[tuple(syms)] = counts.get(tuple(syms), 0) + weight
    words = [[list(w), c] for w, c in sorted(counts.items())]
    base = [c for _, c in bytes_to_unicode()]
    vocab = set(base) | set(c + "</w>" for c in base)
    merges = []
    while len(merges) < n_merges:
        pairs = {}
        for syms, c in words:
            for a, b in zip(syms, syms[1:]):
                pairs[(a, b)] = pairs.get((a, b), 0) + c
        ranked = sorted(pairs.items(), key=lambda kv: (-kv[1], kv[0]))
        best = next((p for p, c in ranked if p[0] + p[1] not in vocab), None)
        if best is None:
            break
        a, b = best
        merges.append(best)
        vocab.add(a + b)
        for w in words:
            syms, out, i = w[0], [], 0
            while i < len(syms):
                if i + 1 < len(syms) and syms[i] == a and syms[i + 1] == b:
                    out.append(a + b)
                    i += 2
                else:
                    out.append(syms[i])
                    i += 1
            w[0] = out
    return merges


def main(argv):
    args = argv[1:]
    n_merges = 1000
    if "--merges" in args:
        k = args.index("--merges")
        n_merges = int(args[k + 1])
        del args[k:k + 2]
    if len(args) != 1:
        raise SystemExit(__doc__.split("\n\n")[1])
    outdir = args[0]
    os.makedirs(outdir, exist_ok=True)
    merges = train(n_merges)
    tokens = [c for _, c in bytes_to_unicode()]
    tokens += [t + "</w>" for t in tokens]
    tokens += [a + b for a, b in merges]
    tokens += ["<|startoftext|>", "<|endoftext|>"]
    assert len(set(tokens)) == len(tokens)
    vocab = {t: i for i, t in enumerate(tokens)}
    with open(os.path.join(outdir, "vocab.json"), "w", encoding="utf-8") as f:
        json.dump(vocab, f, ensure_ascii=False, separators=(",", ":"))
    with open(os.path.join(outdir, "merges.txt"), "w", encoding="utf-8") as f:
        f.write("#version: 0.2\n")
        for a, b in merges:
            f.write("%s %s\n" % (a, b))
    sys.stderr.write("make_synthetic_vocab: %d tokens, %d merges -> %s\n" % (len(tokens), len(merges), outdir))


if __name__ == "__main__":
    main(sys.argv)
