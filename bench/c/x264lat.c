// x264lat: how long libx264 takes to encode one 1080p picture with nalcast's settings
// (ultrafast, zerolatency, ABR 6 Mb/s with a 600 ms VBV, no B-frames, no lookahead), the
// pictures of bench/wayland-cpu's glass paints: two flat halves, two colour pairs in turn,
// each encoded 50 ms after the one before. Prints the median, p90 and least time of
// x264_encoder_encode (the first, an IDR, left out) and the process's CPU per picture.
//   gcc -O2 -o x264lat bench/c/x264lat.c -lx264
//   x264lat THREADS SLICED RC [LOOKAHEAD_THREADS [PICTURES]]
// THREADS 0: x264's choice (on 2 cores with SLICED 1: 2 slice threads); RC 0 ABR, 1 CRF
// 23 with the same VBV, 2 constant QP 23; LOOKAHEAD_THREADS -1: x264's choice.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/resource.h>
#include <x264.h>
static int64_t now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1000000000LL+t.tv_nsec;}
static int cmp(const void*a,const void*b){double x=*(double*)a,y=*(double*)b;return x<y?-1:x>y;}
int main(int argc,char**argv){
  if(argc<4){fprintf(stderr,"usage: x264lat THREADS SLICED RC [LOOKAHEAD_THREADS [PICTURES]]\n");return 2;}
  int threads=atoi(argv[1]), sliced=atoi(argv[2]), rc=atoi(argv[3]); int lat=argc>4?atoi(argv[4]):-1; int n=argc>5?atoi(argv[5]):40;
  int W=1920,H=1080;
  x264_param_t x; x264_param_default_preset(&x,"ultrafast","zerolatency");
  x.i_width=W;x.i_height=H;x.i_csp=X264_CSP_I420;x.i_threads=threads;x.b_sliced_threads=sliced;
  x.i_fps_num=30;x.i_fps_den=1;x.i_timebase_num=1;x.i_timebase_den=30;x.b_vfr_input=0;x.i_bframe=0;x.rc.i_lookahead=0;x.i_sync_lookahead=0;
  x.i_keyint_max=X264_KEYINT_MAX_INFINITE;x.i_scenecut_threshold=0;
  if(rc==0){x.rc.i_rc_method=X264_RC_ABR;x.rc.i_bitrate=6000;x.rc.i_vbv_max_bitrate=6000;x.rc.i_vbv_buffer_size=3600;}
  else if(rc==1){x.rc.i_rc_method=X264_RC_CRF;x.rc.f_rf_constant=23;x.rc.i_vbv_max_bitrate=6000;x.rc.i_vbv_buffer_size=3600;}
  else {x.rc.i_rc_method=X264_RC_CQP;x.rc.i_qp_constant=23;}
  if(lat>=0) x.i_lookahead_threads=lat;
  x.b_annexb=1;x.b_aud=1;x.b_repeat_headers=1;x.i_log_level=X264_LOG_NONE;
  x264_param_apply_profile(&x,"high");
  x264_t*h=x264_encoder_open(&x); x264_encoder_parameters(h,&x);
  uint8_t*buf[2]; for(int k=0;k<2;k++){buf[k]=malloc(W*H*3/2);
    for(int y=0;y<H;y++)for(int xx=0;xx<W;xx++)buf[k][y*W+xx]=(xx<W/2)?(k?60:120):(k?200:30);
    memset(buf[k]+W*H,k?90:160,W*H/4);memset(buf[k]+W*H*5/4,k?170:100,W*H/4);}
  double *ms=malloc(n*sizeof(double)); struct rusage r0,r1; getrusage(RUSAGE_SELF,&r0);
  for(int i=0;i<n;i++){
    x264_picture_t p; x264_picture_init(&p); p.i_type=i==0?X264_TYPE_IDR:X264_TYPE_AUTO; p.i_pts=i;
    p.img.i_csp=X264_CSP_I420;p.img.i_plane=3;uint8_t*b=buf[i&1];p.img.plane[0]=b;p.img.plane[1]=b+W*H;p.img.plane[2]=b+W*H*5/4;
    p.img.i_stride[0]=W;p.img.i_stride[1]=W/2;p.img.i_stride[2]=W/2;
    x264_nal_t*nal;int nn;x264_picture_t o; int64_t t=now(); int sz=x264_encoder_encode(h,&nal,&nn,&p,&o); ms[i]=(now()-t)/1e6;
    if(sz<=0){fprintf(stderr,"held %d\n",i);}
    struct timespec s={0,50000000}; nanosleep(&s,0);
  }
  getrusage(RUSAGE_SELF,&r1);
  double cpu=(r1.ru_utime.tv_sec-r0.ru_utime.tv_sec)+(r1.ru_utime.tv_usec-r0.ru_utime.tv_usec)/1e6+(r1.ru_stime.tv_sec-r0.ru_stime.tv_sec)+(r1.ru_stime.tv_usec-r0.ru_stime.tv_usec)/1e6;
  qsort(ms+1,n-1,sizeof(double),cmp);
  printf("threads %d sliced %d rc %d lat %d (x264: threads %d lookahead_threads %d): median %.2f ms p90 %.2f min %.2f  cpu/frame %.2f ms\n",threads,sliced,rc,lat,x.i_threads,x.i_lookahead_threads,ms[1+(n-1)/2],ms[1+(n-1)*9/10],ms[1],cpu*1000/n);
  x264_encoder_close(h);return 0;}
