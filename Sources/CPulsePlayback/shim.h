// libpulse-simple linked directly, for the audio tests' beep player only (nalcast itself
// opens libpulse with dlopen through CMedia, when --audio asks for it).
#include <pulse/simple.h>
#include <pulse/error.h>
