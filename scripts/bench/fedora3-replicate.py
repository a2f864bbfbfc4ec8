#!/usr/bin/env python3
"""Replicates the Fedora 3 corpus's legacy-fs store (../shared/fedora3/legacy) into a bigger
legacy-fs store for `arca import fedora3` benchmarks: copy n of every object gets its PIDs in
renamed namespaces (demo:5 -> demo-r3:5), in the FOXML, in RELS-EXT/RELS-INT references and
in the INTERNAL_ID of its managed content, whose files are copied under the new names.
The vocabulary namespace `fedora-system` is left alone and its four objects are copied once.

usage: fedora3-replicate.py SOURCE_STORE TARGET_STORE MIN_OBJECTS
"""
import os
import re
import shutil
import sys


def main():
    src, dst, wanted = sys.argv[1], sys.argv[2], int(sys.argv[3])
    objects = []
    for root, _, files in os.walk(os.path.join(src, "objects")):
        for f in files:
            objects.append(os.path.join(root, f))
    datastreams = {}
    for root, _, files in os.walk(os.path.join(src, "datastreams")):
        for f in files:
            datastreams[f] = os.path.join(root, f)
    texts = [open(p, encoding="utf-8").read() for p in sorted(objects)]
    pid_re = re.compile(r'PID="([^"]+)"')
    namespaces = {pid_re.search(t).group(1).split(":")[0] for t in texts}
    namespaces.discard("fedora-system")
    system = [t for t in texts if 'PID="fedora-system:' in t]
    others = [t for t in texts if 'PID="fedora-system:' not in t]
    copies = max(1, -(-(wanted - len(system)) // len(others)))
    os.makedirs(os.path.join(dst, "objects"), exist_ok=True)
    os.makedirs(os.path.join(dst, "datastreams"), exist_ok=True)
    pattern = re.compile(
        r'(PID="|info:fedora/|REF=")(' + "|".join(map(re.escape, sorted(namespaces, key=len, reverse=True))) + r'):'
    )
    count = 0
    for n in range(copies):
        odir = os.path.join(dst, "objects", f"r{n:05d}")
        ddir = os.path.join(dst, "datastreams", f"r{n:05d}")
        os.makedirs(odir, exist_ok=True)
        os.makedirs(ddir, exist_ok=True)
        batch = others + (system if n == 0 else [])
        for t in batch:
            if 'PID="fedora-system:' in t:
                renamed = t
            else:
                renamed = pattern.sub(lambda m: f"{m.group(1)}{m.group(2)}-r{n}:", t)
            pid = pid_re.search(renamed).group(1)
            with open(os.path.join(odir, pid.replace(":", "_", 1)), "w", encoding="utf-8") as out:
                out.write(renamed)
            for ref in re.findall(r'TYPE="INTERNAL_ID" REF="([^"]+)"', t):
                name = ref.replace(":", "_", 1)
                source = datastreams.get(name) or datastreams.get(ref)
                renamed_ref = pattern.sub(lambda m: f"{m.group(1)}{m.group(2)}-r{n}:", 'REF="' + ref)
                new_ref = renamed_ref[len('REF="'):]
                if source:
                    target = os.path.join(ddir, new_ref.replace(":", "_", 1))
                    if os.path.lexists(target):
                        os.remove(target)
                    try:
                        os.link(source, target)
                    except OSError:
                        shutil.copyfile(source, target)
            count += 1
    print(f"{count} objects in {dst}")


if __name__ == "__main__":
    main()
