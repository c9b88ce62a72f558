// retarget's viewer: plays the motions of the page's data with three.js (the global THREE).
// window.viewer reports what is shown, for the browser test (retarget/viz/viewer.py); its
// `scene` is the three.js scene drawn, where motion k is the instanced meshes named
// "points k" (a sphere per joint and end site, at the point) and "bones k" (a cylinder per
// bone, the geometry's y = -1/2 end at the parent point, y = +1/2 at the child), and for a
// robot "capsules k" (a cylinder per collision capsule, its ends at two of the points, its
// radius the instance's x scale) and "capsule ends k" (a sphere at each end), and for a
// character the group "mesh k" (its glTF scene, skinned, playing its clip in step).
(function () {
  "use strict";
  const DATA = JSON.parse(document.getElementById("data").textContent);

  function bytes(b64) {
    const text = atob(b64);
    const out = new Uint8Array(text.length);
    for (let i = 0; i < text.length; i++) out[i] = text.charCodeAt(i);
    return out;
  }
  function floats(b64) {
    return new Float32Array(bytes(b64).buffer);
  }

  const frames = Math.max(...DATA.motions.map((m) => m.frames));
  const fps = DATA.motions[0].fps;
  const motions = DATA.motions.map((m) => ({
    ...m,
    raw: floats(m.positions), // (frames, points, 3) in the file's unit and axes
    contactMask: bytes(m.contacts), // (frames, contact points)
  }));
  const goals = DATA.goals.map((g) => ({ ...g, raw: floats(g.positions) }));

  // -- scene ----------------------------------------------------------------------------------
  const renderer = new THREE.WebGLRenderer({ antialias: true, preserveDrawingBuffer: true });
  renderer.setPixelRatio(window.devicePixelRatio || 1);
  document.body.prepend(renderer.domElement);
  const scene = new THREE.Scene();
  scene.background = new THREE.Color(0xf4f4f2);
  scene.add(new THREE.AmbientLight(0xffffff, 0.7));
  const sun = new THREE.DirectionalLight(0xffffff, 0.9);
  sun.position.set(3, 6, 4);
  scene.add(sun);
  const tallest = Math.max(...motions.map((m) => m.height));
  const grid = floorGrid(20, 0.5);
  scene.add(grid);
  const camera = new THREE.PerspectiveCamera(40, 1, 0.01, 500);

  // per motion: bones as instanced cylinders, points as instanced spheres (contacts in red)
  const RED = new THREE.Color(0xd62728);
  const sphere = new THREE.SphereGeometry(1, 12, 8);
  const cylinder = new THREE.CylinderGeometry(1, 1, 1, 8);
  const shown = new THREE.Vector3();
  const matrix = new THREE.Matrix4();
  const along = new THREE.Vector3();
  const middle = new THREE.Vector3();
  const size = new THREE.Vector3();
  const spin = new THREE.Quaternion();
  const UP = new THREE.Vector3(0, 1, 0);
  motions.forEach((m, k) => {
    m.sticks = new THREE.InstancedMesh(
      cylinder,
      new THREE.MeshLambertMaterial({ color: new THREE.Color(m.colour) }),
      m.bones.length,
    );
    m.sticks.frustumCulled = false;
    m.sticks.name = `bones ${k}`;
    scene.add(m.sticks);
    m.dots = new THREE.InstancedMesh(sphere, new THREE.MeshLambertMaterial(), m.points);
    m.dots.frustumCulled = false;
    m.dots.name = `points ${k}`;
    m.base = new THREE.Color(m.colour);
    for (let p = 0; p < m.points; p++) m.dots.setColorAt(p, m.base);
    scene.add(m.dots);
    m.world = new Float32Array(m.points * 3);
    m.radius = 0.014 * m.height;
    m.thickness = 0.007 * m.height;
    m.capsules = m.capsules || [];
    if (m.capsules.length) {
      // a robot's collision geometry: a cylinder and two end spheres per capsule
      const skin = new THREE.MeshLambertMaterial({
        color: new THREE.Color(m.colour),
        transparent: true,
        opacity: 0.35,
      });
      m.tubes = new THREE.InstancedMesh(cylinder, skin, m.capsules.length);
      m.tubes.frustumCulled = false;
      m.tubes.name = `capsules ${k}`;
      m.caps = new THREE.InstancedMesh(sphere, skin, 2 * m.capsules.length);
      m.caps.frustumCulled = false;
      m.caps.name = `capsule ends ${k}`;
      scene.add(m.tubes, m.caps);
    }
  });
  // a character's skinned mesh (a GLB or self-contained glTF), playing its clip in step
  let meshesLoaded = 0;
  motions.forEach((m, k) => {
    if (!m.mesh) return;
    const data = bytes(m.mesh).buffer;
    new THREE.GLTFLoader().parse(data, "", (gltf) => {
      const group = gltf.scene;
      group.name = `mesh ${k}`;
      const t = m.turn;
      group.quaternion.setFromRotationMatrix(
        new THREE.Matrix4().set(...t[0], 0, ...t[1], 0, ...t[2], 0, 0, 0, 0, 1),
      );
      group.scale.setScalar(m.scale);
      group.position.set(...m.offset);
      group.traverse((o) => { o.frustumCulled = false; });
      m.mixer = new THREE.AnimationMixer(group);
      const action = m.mixer.clipAction(gltf.animations[m.clip]);
      action.setLoop(THREE.LoopOnce);
      action.clampWhenFinished = true;
      action.play();
      m.start = Math.min(...gltf.animations[m.clip].tracks.map((tr) => tr.times[0]));
      scene.add(group);
      meshesLoaded++;
      pose(frame);
    }, (err) => console.error("mesh", k, err));
  });
  const goalDots = goals.map((g) => {
    const mesh = new THREE.Mesh(
      new THREE.SphereGeometry(0.02 * tallest, 12, 10),
      new THREE.MeshLambertMaterial({ color: 0x222222 }),
    );
    scene.add(mesh);
    return mesh;
  });
  // the environment of a report, in the last motion's unit and axes
  const last = motions[motions.length - 1];
  const solid = () =>
    new THREE.MeshLambertMaterial({ color: 0x8c6d46, transparent: true, opacity: 0.6 });
  const turn = new THREE.Quaternion().setFromRotationMatrix(
    new THREE.Matrix4().set(...last.turn[0], 0, ...last.turn[1], 0, ...last.turn[2], 0, 0, 0, 0, 1),
  );
  for (const shape of DATA.scene) {
    if (shape.type === "box") {
      const size = shape.half_extents.map((h) => 2 * h * last.scale);
      const box = new THREE.Mesh(new THREE.BoxGeometry(size[0], size[1], size[2]), solid());
      toShown(last, shape.center, 0, box.position);
      const [w, x, y, z] = shape.rotation || [1, 0, 0, 0];
      box.quaternion.copy(turn).multiply(new THREE.Quaternion(x, y, z, w));
      scene.add(box);
    } else if (shape.type === "sphere") {
      const ball = new THREE.Mesh(
        new THREE.SphereGeometry(shape.radius * last.scale, 24, 16),
        solid(),
      );
      toShown(last, shape.center, 0, ball.position);
      scene.add(ball);
    } else if (shape.type === "heightfield") {
      scene.add(heightField(shape));
    }
  }

  // a height field (x, z grid of heights) as a surface of triangles
  function heightField(shape) {
    const rows = shape.heights;
    const nx = rows.length;
    const nz = rows[0].length;
    const xyz = new Float32Array(nx * nz * 3);
    const at = new THREE.Vector3();
    for (let i = 0; i < nx; i++) {
      for (let j = 0; j < nz; j++) {
        const x = shape.origin[0] + i * shape.spacing[0];
        const z = shape.origin[1] + j * shape.spacing[1];
        toShown(last, [x, rows[i][j], z], 0, at);
        xyz.set([at.x, at.y, at.z], 3 * (i * nz + j));
      }
    }
    const index = [];
    for (let i = 0; i + 1 < nx; i++) {
      for (let j = 0; j + 1 < nz; j++) {
        const a = i * nz + j;
        index.push(a, a + 1, a + nz, a + 1, a + nz + 1, a + nz);
      }
    }
    const geometry = new THREE.BufferGeometry();
    geometry.setAttribute("position", new THREE.BufferAttribute(xyz, 3));
    geometry.setIndex(index);
    geometry.computeVertexNormals();
    return new THREE.Mesh(
      geometry,
      new THREE.MeshLambertMaterial({ color: 0xa9b89a, side: THREE.DoubleSide }),
    );
  }

  // the floor: lines every `step` metres out to `half` metres, every second one darker, cut
  // into pieces `step` long (a software renderer drops a whole line that passes behind the
  // camera)
  function floorGrid(half, step) {
    const n = Math.round(half / step);
    const xyz = [];
    const rgb = [];
    for (let i = -n; i <= n; i++) {
      const c = i === 0 ? 0.45 : i % 2 === 0 ? 0.68 : 0.82;
      const v = i * step;
      for (let j = -n; j < n; j++) {
        const a = j * step;
        const b = a + step;
        xyz.push(v, 0, a, v, 0, b, a, 0, v, b, 0, v);
        for (let k = 0; k < 4; k++) rgb.push(c, c, c);
      }
    }
    const geometry = new THREE.BufferGeometry();
    geometry.setAttribute("position", new THREE.BufferAttribute(new Float32Array(xyz), 3));
    geometry.setAttribute("color", new THREE.BufferAttribute(new Float32Array(rgb), 3));
    return new THREE.LineSegments(geometry, new THREE.LineBasicMaterial({ vertexColors: true }));
  }

  // a point of motion m (its file's unit and axes) as shown: turned Y up, metres, offset
  function toShown(m, xyz, i, out) {
    const t = m.turn;
    const x = xyz[i], y = xyz[i + 1], z = xyz[i + 2];
    out.set(
      m.scale * (t[0][0] * x + t[0][1] * y + t[0][2] * z) + m.offset[0],
      m.scale * (t[1][0] * x + t[1][1] * y + t[1][2] * z) + m.offset[1],
      m.scale * (t[2][0] * x + t[2][1] * y + t[2][2] * z) + m.offset[2],
    );
    return out;
  }

  // -- a frame ----------------------------------------------------------------------------------
  let frame = 0;
  function pose(f) {
    frame = Math.max(0, Math.min(frames - 1, Math.round(f)));
    for (const m of motions) {
      const k = Math.min(frame, m.frames - 1);
      if (m.mixer) m.mixer.setTime(m.start + k / m.fps);
      const base = k * m.points * 3;
      for (let p = 0; p < m.points; p++) {
        toShown(m, m.raw, base + 3 * p, shown);
        m.world[3 * p] = shown.x;
        m.world[3 * p + 1] = shown.y;
        m.world[3 * p + 2] = shown.z;
        matrix.makeScale(m.radius, m.radius, m.radius);
        matrix.setPosition(shown);
        m.dots.setMatrixAt(p, matrix);
        m.dots.setColorAt(p, m.base);
      }
      const nc = m.contactPoints.length;
      for (let c = 0; c < nc; c++) {
        if (m.contactMask[k * nc + c]) m.dots.setColorAt(m.contactPoints[c], RED);
      }
      m.dots.instanceMatrix.needsUpdate = true;
      m.dots.instanceColor.needsUpdate = true;
      const w = m.world;
      m.bones.forEach(([a, b], i) => {
        along.set(w[3 * b] - w[3 * a], w[3 * b + 1] - w[3 * a + 1], w[3 * b + 2] - w[3 * a + 2]);
        const length = along.length();
        middle.set(w[3 * a], w[3 * a + 1], w[3 * a + 2]).addScaledVector(along, 0.5);
        spin.setFromUnitVectors(UP, length > 0 ? along.divideScalar(length) : UP);
        size.set(m.thickness, length, m.thickness);
        m.sticks.setMatrixAt(i, matrix.compose(middle, spin, size));
      });
      m.sticks.instanceMatrix.needsUpdate = true;
      m.capsules.forEach(([a, b, r], i) => {
        const radius = r * m.scale;
        along.set(w[3 * b] - w[3 * a], w[3 * b + 1] - w[3 * a + 1], w[3 * b + 2] - w[3 * a + 2]);
        const length = along.length();
        middle.set(w[3 * a], w[3 * a + 1], w[3 * a + 2]).addScaledVector(along, 0.5);
        spin.setFromUnitVectors(UP, length > 0 ? along.divideScalar(length) : UP);
        size.set(radius, length, radius);
        m.tubes.setMatrixAt(i, matrix.compose(middle, spin, size));
        [a, b].forEach((p, e) => {
          matrix.makeScale(radius, radius, radius);
          matrix.setPosition(w[3 * p], w[3 * p + 1], w[3 * p + 2]);
          m.caps.setMatrixAt(2 * i + e, matrix);
        });
      });
      if (m.tubes) {
        m.tubes.instanceMatrix.needsUpdate = true;
        m.caps.instanceMatrix.needsUpdate = true;
      }
    }
    goals.forEach((g, i) => {
      const k = Math.min(frame, g.frames - 1);
      const ok = Number.isFinite(g.raw[3 * k]);
      goalDots[i].visible = ok;
      if (ok) toShown(last, g.raw, 3 * k, goalDots[i].position);
    });
    scrub.value = String(frame);
    label.textContent = `frame ${frame} / ${frames - 1}`;
  }

  // -- camera: orbit by dragging, zoom by the wheel, following the motions ----------------------
  const orbit = { azimuth: 0.6, elevation: 0.3, distance: 2.6 * tallest + 0.7 * motions.length };
  const target = new THREE.Vector3(0, 0.5 * tallest, 0);
  function centre() {
    const c = new THREE.Vector3();
    for (const m of motions) c.add(new THREE.Vector3(m.world[0], m.world[1], m.world[2]));
    c.divideScalar(motions.length);
    return c;
  }
  function placeCamera() {
    if (follow.checked) {
      const c = centre();
      target.set(c.x, 0.5 * tallest, c.z);
    }
    const ce = Math.cos(orbit.elevation);
    camera.position.set(
      target.x + orbit.distance * ce * Math.sin(orbit.azimuth),
      target.y + orbit.distance * Math.sin(orbit.elevation),
      target.z + orbit.distance * ce * Math.cos(orbit.azimuth),
    );
    camera.lookAt(target);
    grid.position.set(Math.round(target.x), 0, Math.round(target.z));
  }
  let drag = null;
  renderer.domElement.addEventListener("pointerdown", (e) => {
    drag = { x: e.clientX, y: e.clientY };
  });
  window.addEventListener("pointerup", () => (drag = null));
  window.addEventListener("pointermove", (e) => {
    if (!drag) return;
    orbit.azimuth -= 0.008 * (e.clientX - drag.x);
    orbit.elevation = Math.max(-0.2, Math.min(1.5, orbit.elevation + 0.008 * (e.clientY - drag.y)));
    drag = { x: e.clientX, y: e.clientY };
  });
  renderer.domElement.addEventListener(
    "wheel",
    (e) => {
      e.preventDefault();
      orbit.distance = Math.max(0.3, orbit.distance * Math.exp(0.001 * e.deltaY));
    },
    { passive: false },
  );

  // -- controls and the clock --------------------------------------------------------------------
  const scrub = document.getElementById("scrub");
  const label = document.getElementById("frame");
  const playButton = document.getElementById("play");
  const speed = document.getElementById("speed");
  const follow = document.getElementById("follow");
  scrub.max = String(frames - 1);
  document.getElementById("legend").innerHTML = motions
    .map((m) => `<div><span style="background:${m.colour}"></span>${m.name}</div>`)
    .join("");
  let playing = false;
  let clock = 0; // frames, fractional
  let lastTime = null;
  function setPlaying(on) {
    playing = on;
    playButton.textContent = on ? "pause" : "play";
    lastTime = null;
  }
  playButton.addEventListener("click", () => setPlaying(!playing));
  window.addEventListener("keydown", (e) => {
    if (e.code === "Space") {
      e.preventDefault();
      setPlaying(!playing);
    }
  });
  scrub.addEventListener("input", () => {
    clock = Number(scrub.value);
    pose(clock);
  });

  function resize() {
    const h = window.innerHeight - document.getElementById("bar").offsetHeight;
    renderer.setSize(window.innerWidth, h);
    camera.aspect = window.innerWidth / h;
    camera.updateProjectionMatrix();
  }
  window.addEventListener("resize", resize);

  let drawn = 0; // frames drawn since the page opened (the test measures playback with it)
  function tick(time) {
    drawn += 1;
    if (playing) {
      if (lastTime !== null) {
        clock += ((time - lastTime) / 1000) * fps * Number(speed.value);
        if (clock >= frames) clock = 0;
        pose(clock);
      }
      lastTime = time;
    }
    placeCamera();
    renderer.render(scene, camera);
    requestAnimationFrame(tick);
  }

  resize();
  pose(0);
  placeCamera();
  renderer.render(scene, camera);
  requestAnimationFrame(tick);

  // a live stream (retarget serve): each pose's positions replace the first motion's frame
  let received = 0;
  let liveFrame = -1;
  if (DATA.live) {
    const m = motions[0];
    const socket = new WebSocket(DATA.live);
    socket.onmessage = (event) => {
      const message = JSON.parse(event.data);
      if (message.type !== "pose" || message.positions.length !== m.points) return;
      message.positions.forEach((p, i) => m.raw.set(p, 3 * i));
      received += 1;
      liveFrame = message.frame;
      pose(0);
      label.textContent = `live frame ${liveFrame}`;
    };
    socket.onclose = () => (label.textContent = `live: closed after frame ${liveFrame}`);
  }

  window.viewer = {
    frames,
    fps,
    revision: THREE.REVISION,
    scene, // what is drawn: the meshes "points k" and "bones k" (the header)
    meshes: () => meshesLoaded, // characters' skinned meshes loaded (groups "mesh k")
    frame: () => frame,
    playing: () => playing,
    play: () => setPlaying(true),
    pause: () => setPlaying(false),
    setFrame(n) {
      clock = n;
      pose(n);
      placeCamera();
      renderer.render(scene, camera);
      return frame;
    },
    // the camera's orbit about the followed point: radians, radians, metres
    orbit(azimuth, elevation, distance) {
      Object.assign(orbit, { azimuth, elevation, distance });
      placeCamera();
      renderer.render(scene, camera);
      return [camera.position.x, camera.position.y, camera.position.z];
    },
    // motion k's points at the shown frame, in its file's unit and axes (float32 data)
    points(k) {
      const m = motions[k];
      const i = Math.min(frame, m.frames - 1) * m.points * 3;
      return Array.from(m.raw.subarray(i, i + m.points * 3));
    },
    goals: () => goals.length,
    drawn: () => drawn,
    received: () => received,
    liveFrame: () => liveFrame,
    ready: true,
  };
})();
