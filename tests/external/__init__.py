"""External corpus: kernels adapted from TileLang's upstream examples (tile-ai/tilelang,
examples/...), each naming its source file in SOURCE. Every module is a `python -m verify`
module (KERNELS, PRECONDITIONS, ...) plus SOURCE and EXPECT: kernel name -> None when the
kernel must be proved, or (check name, message fragment, why) for a true finding."""
