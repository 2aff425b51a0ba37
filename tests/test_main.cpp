#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

// Every suite reports its counts; GPU tests skip themselves (with one line) where no GPU is present.
int main(int argc, char** argv) {
  doctest::Context ctx;
  ctx.applyCommandLine(argc, argv);
  return ctx.run();
}
