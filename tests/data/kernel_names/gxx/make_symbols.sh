#!/bin/sh
# Compile the C++ files here (kernel-name shapes: namespaces, templates with integer,
# bool and enum arguments, lambdas, packs; and the standard library's templates) and
# write every mangled symbol beside what GNU c++filt prints for it:
#   sh tests/data/kernel_names/gxx/make_symbols.sh
# Needs g++ and c++filt (GNU Binutils); the committed output came from g++ 12.2.0 and
# c++filt 2.40 (Debian 12).
set -eu
cd "$(dirname "$0")"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for f in kernels big more; do
  g++ -std=c++20 -O0 -c "$f.cpp" -o "$tmp/$f.o"
  nm "$tmp/$f.o" | awk '{print $NF}' | grep '^_Z' >> "$tmp/all"
done
printf '%s\n' _ZN5aiter24add_rmsnorm_quant_kernelIDF16bEEv.kd _Z3fooi.constprop.0.isra.1 >> "$tmp/all"
sort -u "$tmp/all" > "$tmp/syms"
c++filt --no-recurse-limit < "$tmp/syms" > "$tmp/gnu"
paste "$tmp/syms" "$tmp/gnu" | gzip -9n > ../gxx_symbols.tsv.gz
