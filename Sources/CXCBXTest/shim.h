#ifndef CXCBXTEST_SHIM_H
#define CXCBXTEST_SHIM_H
// XTest (fake input), for the X11 tests only: they move the pointer the way a mouse
// does, through the server's input path (raw motion events and all), which XWarpPointer
// does not take. nalcast itself never links it.
#include <xcb/xcb.h>
#include <xcb/xtest.h>
#endif
