//! The viewport on the GPU: point layers drawn as screen-aligned quads (one instance per point) into egui's own
//! render pass, with its depth buffer (the window is created with a 32-bit depth buffer for this), shaded by the
//! normal against the view direction so walls and floors read apart. Buffers are uploaded once per layer
//! version and kept in egui-wgpu's callback resources.

use std::collections::HashMap;

use eframe::egui;
use eframe::egui_wgpu::{self, CallbackResources, CallbackTrait, RenderState, ScreenDescriptor};
use eframe::wgpu::{self, util::DeviceExt};

use super::points::{GpuPoint, PointLayer};

/// The depth format the window is created with (`NativeOptions::depth_buffer = 32`).
pub const DEPTH_FORMAT: wgpu::TextureFormat = wgpu::TextureFormat::Depth32Float;

const SHADER: &str = r#"
struct U { view_proj: mat4x4<f32>, eye: vec4<f32>, params: vec4<f32> };
@group(0) @binding(0) var<uniform> u: U;
struct VIn { @location(0) pos: vec3<f32>, @location(1) color: vec4<f32>, @location(2) normal: vec4<f32> };
struct VOut { @builtin(position) clip: vec4<f32>, @location(0) color: vec4<f32> };

@vertex fn vs_main(@builtin(vertex_index) vi: u32, p: VIn) -> VOut {
    var corners = array<vec2<f32>, 6>(vec2(-1.0, -1.0), vec2(1.0, -1.0), vec2(1.0, 1.0),
                                      vec2(-1.0, -1.0), vec2(1.0, 1.0), vec2(-1.0, 1.0));
    var c = u.view_proj * vec4<f32>(p.pos, 1.0);
    let off = corners[vi] * u.params.z / u.params.xy;
    c = vec4<f32>(c.xy + off * c.w, c.z, c.w);
    var shade = 1.0;
    if (u.params.w > 0.5 && dot(p.normal.xyz, p.normal.xyz) > 0.1) {
        let v = normalize(u.eye.xyz - p.pos);
        shade = 0.3 + 0.7 * abs(dot(normalize(p.normal.xyz), v));
    }
    var out: VOut;
    out.clip = c;
    out.color = vec4<f32>(p.color.rgb * shade, 1.0);
    return out;
}

@fragment fn fs_main(v: VOut) -> @location(0) vec4<f32> {
    return v.color;
}
"#;

#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
struct Uniforms {
    view_proj: [[f32; 4]; 4],
    eye: [f32; 4],
    /// viewport width and height in pixels, point size in pixels, shading on (1) or off (0).
    params: [f32; 4],
}

struct GpuLayer {
    version: u64,
    points: wgpu::Buffer,
    uniforms: wgpu::Buffer,
    bind: wgpu::BindGroup,
}

struct Resources {
    pipeline: wgpu::RenderPipeline,
    layout: wgpu::BindGroupLayout,
    layers: HashMap<usize, GpuLayer>,
}

/// Creates the pipeline once, at app start, when the window has a wgpu renderer.
pub fn init(rs: &RenderState) {
    let device = &rs.device;
    let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: Some("aerie_points"),
        source: wgpu::ShaderSource::Wgsl(SHADER.into()),
    });
    let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
        label: Some("aerie_points_uniforms"),
        entries: &[wgpu::BindGroupLayoutEntry {
            binding: 0,
            visibility: wgpu::ShaderStages::VERTEX,
            ty: wgpu::BindingType::Buffer {
                ty: wgpu::BufferBindingType::Uniform,
                has_dynamic_offset: false,
                min_binding_size: None,
            },
            count: None,
        }],
    });
    let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
        label: Some("aerie_points"),
        bind_group_layouts: &[Some(&layout)],
        immediate_size: 0,
    });
    let pipeline = device.create_render_pipeline(&wgpu::RenderPipelineDescriptor {
        label: Some("aerie_points"),
        layout: Some(&pipeline_layout),
        vertex: wgpu::VertexState {
            module: &module,
            entry_point: Some("vs_main"),
            buffers: &[Some(wgpu::VertexBufferLayout {
                array_stride: std::mem::size_of::<GpuPoint>() as u64,
                step_mode: wgpu::VertexStepMode::Instance,
                attributes: &wgpu::vertex_attr_array![0 => Float32x3, 1 => Unorm8x4, 2 => Snorm8x4],
            })],
            compilation_options: wgpu::PipelineCompilationOptions::default(),
        },
        primitive: wgpu::PrimitiveState::default(),
        depth_stencil: Some(wgpu::DepthStencilState {
            format: DEPTH_FORMAT,
            depth_write_enabled: Some(true),
            depth_compare: Some(wgpu::CompareFunction::Less),
            stencil: wgpu::StencilState::default(),
            bias: wgpu::DepthBiasState::default(),
        }),
        multisample: wgpu::MultisampleState::default(),
        fragment: Some(wgpu::FragmentState {
            module: &module,
            entry_point: Some("fs_main"),
            targets: &[Some(wgpu::ColorTargetState {
                format: rs.target_format,
                blend: None,
                write_mask: wgpu::ColorWrites::ALL,
            })],
            compilation_options: wgpu::PipelineCompilationOptions::default(),
        }),
        multiview_mask: None,
        cache: None,
    });
    rs.renderer.write().callback_resources.insert(Resources {
        pipeline,
        layout,
        layers: HashMap::new(),
    });
}

/// One frame's draw: the layers (slot, contents, how many points of its level-of-detail order to draw).
pub struct DrawPoints {
    pub view_proj: [[f32; 4]; 4],
    pub eye: [f32; 3],
    pub size_px: [f32; 2],
    pub layers: Vec<(usize, PointLayer, usize)>,
}

impl CallbackTrait for DrawPoints {
    fn prepare(
        &self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        _screen: &ScreenDescriptor,
        _encoder: &mut wgpu::CommandEncoder,
        resources: &mut CallbackResources,
    ) -> Vec<wgpu::CommandBuffer> {
        let Some(res) = resources.get_mut::<Resources>() else {
            return Vec::new();
        };
        for (slot, layer, _) in &self.layers {
            let stale = res
                .layers
                .get(slot)
                .is_none_or(|g| g.version != layer.version);
            if stale {
                res.layers.insert(*slot, upload(device, &res.layout, layer));
            }
            let u = Uniforms {
                view_proj: self.view_proj,
                eye: [self.eye[0], self.eye[1], self.eye[2], 1.0],
                params: [
                    self.size_px[0],
                    self.size_px[1],
                    layer.point_size_px,
                    if layer.shaded { 1.0 } else { 0.0 },
                ],
            };
            if let Some(g) = res.layers.get(slot) {
                queue.write_buffer(&g.uniforms, 0, bytemuck::bytes_of(&u));
            }
        }
        Vec::new()
    }

    fn paint(
        &self,
        _info: egui::PaintCallbackInfo,
        pass: &mut wgpu::RenderPass<'static>,
        resources: &CallbackResources,
    ) {
        let Some(res) = resources.get::<Resources>() else {
            return;
        };
        pass.set_pipeline(&res.pipeline);
        for (slot, _, count) in &self.layers {
            if let Some(g) = res.layers.get(slot)
                && *count > 0
            {
                pass.set_bind_group(0, &g.bind, &[]);
                pass.set_vertex_buffer(0, g.points.slice(..));
                pass.draw(0..6, 0..*count as u32);
            }
        }
    }
}

fn upload(device: &wgpu::Device, layout: &wgpu::BindGroupLayout, layer: &PointLayer) -> GpuLayer {
    // An empty buffer cannot be bound; one zero point stands in (it is never drawn: count is 0).
    let data: &[GpuPoint] = if layer.points.is_empty() {
        &[GpuPoint {
            pos: [0.0; 3],
            color: [0; 4],
            normal: [0; 4],
        }]
    } else {
        &layer.points
    };
    let points = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
        label: Some("aerie_points"),
        contents: bytemuck::cast_slice(data),
        usage: wgpu::BufferUsages::VERTEX,
    });
    let uniforms = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("aerie_points_uniforms"),
        size: std::mem::size_of::<Uniforms>() as u64,
        usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    let bind = device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: Some("aerie_points_uniforms"),
        layout,
        entries: &[wgpu::BindGroupEntry {
            binding: 0,
            resource: uniforms.as_entire_binding(),
        }],
    });
    GpuLayer {
        version: layer.version,
        points,
        uniforms,
        bind,
    }
}

/// The paint callback for `rect`.
pub fn callback(rect: egui::Rect, draw: DrawPoints) -> egui::Shape {
    egui::Shape::Callback(egui_wgpu::Callback::new_paint_callback(rect, draw))
}
