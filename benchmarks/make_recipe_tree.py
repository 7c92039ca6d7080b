"""Write an InferenceX-sized recipe tree for ``audit_vs_grep.py``: about 1,300 files, 16 MB.

Run by hand::

    python benchmarks/make_recipe_tree.py /tmp/ix-tree
    python benchmarks/audit_vs_grep.py /tmp/ix-tree

The layout follows InferenceX's repository: several hundred single-node
launch scripts (agentic and fixed-sequence-length), srt-slurm recipe YAMLs
per engine and model, two large master configs, and the code, docs, CI
workflows and result files around them, most of which mention no knob.  It
is denser in serve configs than InferenceX itself (about 1,500 checked
against its 290), so an audit of it costs more per byte.  The
recipes are the audit test fixtures (``tests/data/audit/repo``) copied under
many names; the rest is filler of realistic sizes.  Deterministic: the same
tree every time.
"""

import argparse
import os
import random
import shutil

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(os.path.dirname(HERE), "tests", "data", "audit", "repo")
GPUS = ("b200", "b300", "h200", "h100", "mi300x", "mi355x", "gb200", "gb300")
SCENARIOS = ("agentic", "1k1k", "8k1k", "1k8k")


def _fixtures(kind):
    out = []
    for base, _, files in os.walk(FIXTURES):
        for name in files:
            path = os.path.join(base, name)
            if kind == "sh" and name.endswith(".sh") or \
                    kind == "yaml" and name.endswith(".yaml") and "configs" not in base:
                with open(path, encoding="utf-8", errors="replace") as fh:
                    out.append((name, fh.read()))
    return sorted(out)


def _filler(rng, size, lang):
    words = ["import os", "def run(args):", "    return args", "class Runner:", "# results",
             "for i in range(10):", "    total += i", "if __name__ == '__main__':",
             "model: deepseek-v4", "throughput: 1234.5", "latency_p99: 0.87", "| gpu | tps |",
             "The benchmark measures output tokens per second per GPU.", "echo done",
             "    print(json.dumps(result))", "- name: run benchmark", "  uses: actions/x@v4"]
    lines, n = [], 0
    while n < size:
        line = rng.choice(words) + (f"  # {rng.randrange(10 ** 6)}" if lang != "md" else "")
        lines.append(line)
        n += len(line) + 1
    return "\n".join(lines) + "\n"


def make_tree(root, *, seed=0):
    """Write the tree under ``root`` (replaced); returns (files, bytes)."""
    rng = random.Random(seed)
    if os.path.exists(root):
        shutil.rmtree(root)
    scripts, recipes = _fixtures("sh"), _fixtures("yaml")

    def write(rel, text):
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)

    for i in range(420):                      # single-node launchers
        name, text = scripts[i % len(scripts)]
        scenario = SCENARIOS[i % len(SCENARIOS)]
        folder = "agentic" if scenario == "agentic" else "fixed_seq_len"
        stem = name[:-3]
        write(f"benchmarks/single_node/{folder}/{stem}_{GPUS[i % len(GPUS)]}_{i}.sh", text)
    for i in range(380):                      # srt-slurm recipes
        name, text = recipes[i % len(recipes)]
        scenario = SCENARIOS[i % len(SCENARIOS)]
        write(f"benchmarks/multi_node/srt-slurm-recipes/e{i % 4}/m{i % 9}/{scenario}/"
              f"{name[:-5]}-{i}.yaml", text)
    with open(os.path.join(FIXTURES, "configs", "test-master.yaml"), encoding="utf-8") as fh:
        master = fh.read()
    for name in ("nvidia-master.yaml", "amd-master.yaml"):   # large master configs
        body = master.split("\n", 1)[1]
        write(f".github/configs/{name}", master + "".join(
            body.replace("dsv4-fp4", f"dsv4-fp4-{j}") for j in range(40)))
    for i in range(500):                      # code, docs, workflows, results
        lang = ("py", "md", "json", "yml", "csv")[i % 5]
        size = rng.choice((2_000, 10_000, 24_000, 80_000))
        write(f"{('utils', 'docs', 'results', '.github/workflows', 'runners')[i % 5]}/"
              f"f{i}.{lang}", _filler(rng, size, lang))
    files = total = 0
    for base, _, names in os.walk(root):
        for n in names:
            files += 1
            total += os.path.getsize(os.path.join(base, n))
    return files, total


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("root")
    args = parser.parse_args(argv)
    files, total = make_tree(args.root)
    print(f"{files} files, {total / 1e6:.1f} MB under {args.root}")


if __name__ == "__main__":
    main()
