// hurray.h must also be valid C++ (checked with g++ -fsyntax-only by run.sh).
#include "hurray.h"

static_assert(HURRAY_END_OF_STREAM > 0, "end of stream is positive");
static_assert(sizeof(HurrayStatus) == 4, "statuses are int32_t");
