#ifndef NC_PW_PARAMS_H
#define NC_PW_PARAMS_H
// What nalcast's PipeWire stream asks of a video node, in one place for pipewire.c and for
// bench/c/pwrecv.c (which measures PipeWire's own part of the same stream): the formats it
// takes, then, once the node chose one, the buffers and metadata. SPA's inline pod builders
// only: no libpipewire call, so the bench includes it as it is.
#include <spa/param/video/format-utils.h>
#include <spa/param/buffers.h>
#include <spa/buffer/meta.h>

/// Room for a cursor metadata of a `w`x`h` bitmap (as PipeWire's examples count it).
#define NC_PW_CURSOR_META_SIZE(w, h) ((int)(sizeof(struct spa_meta_cursor) + sizeof(struct spa_meta_bitmap) + (w) * (h) * 4))
/// The largest bitmap taken (mutter offers at most 384 a side, scaled pointers included).
#define NC_PW_CURSOR_MAX 384

/// The formats we take: BGRx, RGBx, xRGB (and their alpha forms), any size, any rate.
static inline const struct spa_pod *nc_pw_format_param(struct spa_pod_builder *b) {
    struct spa_rectangle def = SPA_RECTANGLE(1280, 720), min = SPA_RECTANGLE(2, 2), max = SPA_RECTANGLE(16384, 16384);
    struct spa_fraction rdef = SPA_FRACTION(30, 1), rmin = SPA_FRACTION(0, 1), rmax = SPA_FRACTION(1000, 1);
    return spa_pod_builder_add_object(b, SPA_TYPE_OBJECT_Format, SPA_PARAM_EnumFormat,
        SPA_FORMAT_mediaType, SPA_POD_Id(SPA_MEDIA_TYPE_video),
        SPA_FORMAT_mediaSubtype, SPA_POD_Id(SPA_MEDIA_SUBTYPE_raw),
        SPA_FORMAT_VIDEO_format, SPA_POD_CHOICE_ENUM_Id(7, SPA_VIDEO_FORMAT_BGRx, SPA_VIDEO_FORMAT_BGRx,
            SPA_VIDEO_FORMAT_RGBx, SPA_VIDEO_FORMAT_xRGB, SPA_VIDEO_FORMAT_BGRA, SPA_VIDEO_FORMAT_RGBA, SPA_VIDEO_FORMAT_ARGB),
        SPA_FORMAT_VIDEO_size, SPA_POD_CHOICE_RANGE_Rectangle(&def, &min, &max),
        SPA_FORMAT_VIDEO_framerate, SPA_POD_CHOICE_RANGE_Fraction(&rdef, &rmin, &rmax));
}

/// Buffers in memory we can map (memfd, shm or plain memory): no DMA-BUF, which would need a
/// GPU to read. Damage rectangles and the header as metadata, and with `cursor` the pointer
/// (position, hotspot, and its bitmap when it changed): a compositor in cursor mode
/// "metadata" sends a pointer move as a buffer without pixels, and we draw the bitmap
/// ourselves. Into `params` (room for 4); returns how many.
static inline uint32_t nc_pw_buffer_params(struct spa_pod_builder *b, const struct spa_pod **params, int cursor) {
    params[0] = spa_pod_builder_add_object(b, SPA_TYPE_OBJECT_ParamBuffers, SPA_PARAM_Buffers,
        SPA_PARAM_BUFFERS_buffers, SPA_POD_CHOICE_RANGE_Int(4, 2, 16),
        SPA_PARAM_BUFFERS_blocks, SPA_POD_Int(1),
        SPA_PARAM_BUFFERS_dataType, SPA_POD_CHOICE_FLAGS_Int((1 << SPA_DATA_MemFd) | (1 << SPA_DATA_MemPtr)));
    params[1] = spa_pod_builder_add_object(b, SPA_TYPE_OBJECT_ParamMeta, SPA_PARAM_Meta,
        SPA_PARAM_META_type, SPA_POD_Id(SPA_META_Header),
        SPA_PARAM_META_size, SPA_POD_Int(sizeof(struct spa_meta_header)));
    params[2] = spa_pod_builder_add_object(b, SPA_TYPE_OBJECT_ParamMeta, SPA_PARAM_Meta,
        SPA_PARAM_META_type, SPA_POD_Id(SPA_META_VideoDamage),
        SPA_PARAM_META_size, SPA_POD_CHOICE_RANGE_Int(sizeof(struct spa_meta_region) * 16,
                                                      sizeof(struct spa_meta_region), sizeof(struct spa_meta_region) * 16));
    if (!cursor) return 3;
    params[3] = spa_pod_builder_add_object(b, SPA_TYPE_OBJECT_ParamMeta, SPA_PARAM_Meta,
        SPA_PARAM_META_type, SPA_POD_Id(SPA_META_Cursor),
        SPA_PARAM_META_size, SPA_POD_CHOICE_RANGE_Int(NC_PW_CURSOR_META_SIZE(64, 64), NC_PW_CURSOR_META_SIZE(1, 1),
                                                      NC_PW_CURSOR_META_SIZE(NC_PW_CURSOR_MAX, NC_PW_CURSOR_MAX)));
    return 4;
}
#endif
