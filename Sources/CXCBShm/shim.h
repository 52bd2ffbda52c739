#ifndef CXCBSHM_SHIM_H
#define CXCBSHM_SHIM_H
#include <xcb/xcb.h>
#include <xcb/shm.h>
#include <xcb/xfixes.h>
#include <xcb/randr.h>
#include <xcb/damage.h>
#include <xcb/xinput.h>
#include <sys/ipc.h>
#include <sys/shm.h>

// xcb_shm_id is an extern of an incomplete struct type: Swift cannot take its address.
static inline xcb_extension_t *CXCBShm_extension_id(void) { return &xcb_shm_id; }
// Same for the XFixes extension (cursor image).
static inline xcb_extension_t *CXCBShm_xfixes_extension_id(void) { return &xcb_xfixes_id; }
// Same for RandR (screen size change notifications).
static inline xcb_extension_t *CXCBShm_randr_extension_id(void) { return &xcb_randr_id; }

// Same for DAMAGE (capture on change).
static inline xcb_extension_t *CXCBShm_damage_extension_id(void) { return &xcb_damage_id; }

// Same for XInput (pointer motion as events: XI_RawMotion).
static inline xcb_extension_t *CXCBShm_xinput_extension_id(void) { return &xcb_input_id; }
// XISelectEvents for XI_RawMotion of every master device on `window` (the root: raw
// events go to root windows only). The request takes a variable-length mask after a
// header, which Swift cannot lay out.
static inline xcb_void_cookie_t CXCBShm_select_raw_motion(xcb_connection_t *c, xcb_window_t window) {
    struct { xcb_input_event_mask_t head; uint32_t bits; } mask;
    mask.head.deviceid = XCB_INPUT_DEVICE_ALL_MASTER;
    mask.head.mask_len = 1;
    mask.bits = XCB_INPUT_XI_EVENT_MASK_RAW_MOTION;
    return xcb_input_xi_select_events_checked(c, window, 1, &mask.head);
}
// Whether `event` is an XI_RawMotion of the extension with major opcode `opcode`
// (XInput 2 events are GenericEvents: the extension and its event type are inside).
static inline int CXCBShm_is_raw_motion(const xcb_generic_event_t *event, uint8_t opcode) {
    if ((event->response_type & 0x7f) != XCB_GE_GENERIC) return 0;
    const xcb_ge_generic_event_t *generic = (const xcb_ge_generic_event_t *)event;
    return generic->extension == opcode && generic->event_type == XCB_INPUT_RAW_MOTION;
}


// IPC_PRIVATE is a macro with a cast, ((__key_t) 0): Swift does not import it.
static inline key_t CXCBShm_ipc_private(void) { return IPC_PRIVATE; }
// shmat signals failure with (void *)-1, a cast macro-like value: compare here, not in Swift.
static inline int CXCBShm_shmat_failed(const void *address) { return address == (const void *)-1; }
// Event codes carry a "sent by SendEvent" flag in the top bit (XCB_EVENT_RESPONSE_TYPE is a macro).
static inline uint8_t CXCBShm_event_type(const xcb_generic_event_t *event) { return event->response_type & 0x7f; }

// The MIT-SHM structures we read: a layout change would corrupt frames silently.
_Static_assert(sizeof(xcb_shm_get_image_reply_t) == 16, "xcb_shm_get_image_reply_t layout");
_Static_assert(sizeof(xcb_xfixes_get_cursor_image_reply_t) == 32, "xcb_xfixes_get_cursor_image_reply_t layout");
#endif
